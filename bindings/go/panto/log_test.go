package panto

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

const logSecret = "sk-go-log-SECRET-0123456789"

type logRecord struct {
	level   LogLevel
	message string
	fields  map[string]any
}

// TestLogger: a turn's request span reaches the Go logger with its model and token counts, the
// retry event with its reason scrubbed, the prompt (log_content on) with the key scrubbed; the
// API key itself never arrives; and a nil logger turns logging off.
func TestLogger(t *testing.T) {
	var mu sync.Mutex
	var records []logRecord
	err := SetLogger(LogDebug, func(level LogLevel, message string, fields map[string]any) {
		mu.Lock()
		records = append(records, logRecord{level, message, fields})
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = SetLogger(LogOff, nil) })

	loggedTurn(t, "Please remember my key "+logSecret+" and answer.")
	if err := SetLogger(LogOff, nil); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	got := records
	mu.Unlock()
	all, err := json.Marshal(fmt.Sprint(got))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(all), logSecret) {
		t.Fatalf("the API key reached the logger: %s", all)
	}
	find := func(level LogLevel, message string, match func(map[string]any) bool) map[string]any {
		for _, r := range got {
			if r.level == level && r.message == message && match(r.fields) {
				return r.fields
			}
		}
		t.Fatalf("no %s record %q in %v", level, message, got)
		return nil
	}
	chat := find(LogInfo, "chat", func(f map[string]any) bool { return f["panto.request.attempt"] == float64(2) })
	want := map[string]any{
		"log.kind":                       "span",
		"gen_ai.request.model":           "claude-sonnet-4-5",
		"gen_ai.usage.input_tokens":      float64(1000),
		"gen_ai.usage.output_tokens":     float64(200),
		"gen_ai.response.finish_reasons": "end_turn",
	}
	for k, v := range want {
		if chat[k] != v {
			t.Errorf("chat span: %s = %#v, want %#v (%v)", k, chat[k], v, chat)
		}
	}
	if _, ok := chat["panto.duration_ms"].(float64); !ok {
		t.Errorf("chat span has no duration: %v", chat)
	}
	retry := find(LogWarn, "retrying the provider request", func(map[string]any) bool { return true })
	if retry["log.name"] != "panto.retry" || !strings.Contains(fmt.Sprint(retry["panto.retry.reason"]), "[redacted]") {
		t.Errorf("retry event: %v", retry)
	}
	prompt := find(LogDebug, "user prompt", func(map[string]any) bool { return true })
	if prompt["gen_ai.input.messages"] != "Please remember my key [redacted] and answer." {
		t.Errorf("prompt event: %v", prompt)
	}

	// Off: another turn reaches nothing.
	before := len(got)
	loggedTurn(t, "Again")
	mu.Lock()
	after := len(records)
	mu.Unlock()
	if after != before {
		t.Errorf("%d records after logging was turned off", after-before)
	}
}

// loggedTurn runs one turn that is retried once after a 529 quoting the key, on its own
// runtime, and closes everything, so every span has closed when it returns.
func loggedTurn(t *testing.T, prompt string) {
	t.Helper()
	reset(t)
	push(t, `[{"status": 529, "headers": [["retry-after", "0"]], "json": {"type": "error",
		"error": {"type": "overloaded_error", "message": "Overloaded (key `+logSecret+`)"}}},
		{"builder": {"name": "anthropic_text", "args": {"text": "Logged answer.",
		"usage": {"input_tokens": 1000, "output_tokens": 200}}}}]`)
	cfg, err := NewConfig(fmt.Sprintf(`{"provider": {"api_style": "anthropic-messages", "base_url": %q,
		"model": "claude-sonnet-4-5", "api_key": %q}, "retry": {"max_attempts": 2, "base_delay_ms": 1,
		"max_delay_ms": 1}, "compaction": {"enabled": false}, "log_content": true}`, mockURL, logSecret))
	if err != nil {
		t.Fatal(err)
	}
	agent := agentWith(t, cfg)
	run, err := agent.Run(context.Background(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := collect(t, run)
	if err := run.Err(); err != nil {
		t.Fatal(err)
	}
	if text != "Logged answer." {
		t.Fatalf("text %q", text)
	}
	// The last handle: the runtime stops, and with it every task that held a span.
	agent.Close()
}
