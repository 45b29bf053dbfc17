package panto

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestStatusCodes: every PANTO_ERR_* constant has its Go name, and the library is the header's.
func TestStatusCodes(t *testing.T) {
	codes := map[int]string{
		CodeNull: "PANTO_ERR_NULL", CodeUTF8: "PANTO_ERR_UTF8", CodeInvalidArgument: "PANTO_ERR_INVALID_ARGUMENT",
		CodeConfig: "PANTO_ERR_CONFIG", CodeSessionNotFound: "PANTO_ERR_SESSION_NOT_FOUND",
		CodeSessionAmbiguous: "PANTO_ERR_SESSION_AMBIGUOUS", CodeSessionInUse: "PANTO_ERR_SESSION_IN_USE",
		CodeStore: "PANTO_ERR_STORE", CodeProvider: "PANTO_ERR_PROVIDER", CodeCancelled: "PANTO_ERR_CANCELLED",
		CodeBusy: "PANTO_ERR_BUSY", CodeTool: "PANTO_ERR_TOOL", CodeState: "PANTO_ERR_STATE",
		CodePanic: "PANTO_ERR_PANIC", CodeOther: "PANTO_ERR_OTHER",
	}
	for code := -1; code >= -15; code-- {
		if got := StatusName(code); codes[code] != got {
			t.Errorf("status %d is %s in libpanto, %q in Go", code, got, codes[code])
		}
	}
	if ABIVersion() != HeaderABIVersion {
		t.Errorf("library ABI %d, header ABI %d", ABIVersion(), HeaderABIVersion)
	}
}

// TestConfigIsStrict: a typo or a value that breaks every request is refused, naming the field.
func TestConfigIsStrict(t *testing.T) {
	for extra, want := range map[string]string{
		`"max_step": 5`:                         "config: max_step: unknown field",
		`"idle_timeout_ms": 0`:                  "config: idle_timeout_ms: must be at least 1",
		`"compaction": {"threshold": 7}`:        "config: compaction.threshold: must be a fraction",
		`"retry": {"max_attempts": 0}`:          "config: retry.max_attempts: must be at least 1",
		`"max_steps": 0`:                        "config: max_steps: must be at least 1",
		`"provider2": {}`:                       "config: provider2: unknown field",
		`"compaction": {"keep_recent": 1}`:      "config: compaction.keep_recent: unknown field",
		`"retry": {"base_delay": 1, "x": true}`: "config: retry.base_delay: unknown field",
	} {
		_, err := NewConfig(fmt.Sprintf(`{"provider": {"api_style": "openai-chat", "base_url": "x",
			"model": "m"}, %s}`, extra))
		if !HasCode(err, CodeConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", extra, err, want)
		}
	}
}

// TestAgentParity: what the C ABI offers an agent, Go has: the system prompt, another config,
// compaction, session info, and a retry that does not repeat the prompt.
func TestAgentParity(t *testing.T) {
	reset(t)
	session := fileSession(t)
	if info, err := session.Info(); err != nil || info.ID != session.ID() || info.MessageCount != 0 {
		t.Errorf("session info %+v, %v", info, err)
	}
	refused, err := NewConfig(`{"provider": {"api_style": "anthropic-messages", "base_url": "http://127.0.0.1:1",
		"model": "claude-sonnet-4-5", "api_key": "k"}, "retry": {"max_attempts": 1}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	agent, err := NewAgent(refused, session)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if err := agent.SetSystemPrompt("Be brief."); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Retry(context.Background()); !HasCode(err, CodeState) ||
		!strings.Contains(err.Error(), "nothing to retry") {
		t.Errorf("a retry with no turn: %v", err)
	}

	run, err := agent.Run(context.Background(), "Apples?")
	if err != nil {
		t.Fatal(err)
	}
	collect(t, run)
	if !HasCode(run.Err(), CodeProvider) {
		t.Fatalf("a refused connection ended the turn with %v", run.Err())
	}

	// keep_recent_tokens 1: a compaction keeps only the last message verbatim.
	cfg, err := NewConfig(fmt.Sprintf(`{"provider": {"api_style": "anthropic-messages", "base_url": %q,
		"model": "claude-sonnet-4-5", "api_key": "k"}, "retry": {"max_attempts": 1},
		"compaction": {"enabled": false, "keep_recent_tokens": 1}}`, mockURL))
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	if err := agent.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	push(t, `{"builder": {"name": "anthropic_text", "args": {"text": "Red."}}}`)
	run, err = agent.Retry(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := collect(t, run); text != "Red." || run.Err() != nil {
		t.Fatalf("the retry: %q, %v", text, run.Err())
	}
	reqs := requests(t)
	if len(reqs) != 1 || strings.Count(string(reqs[0].Body), "Apples?") != 1 ||
		!strings.Contains(string(reqs[0].Body), "Be brief.") {
		t.Fatalf("the retried request: %v", reqs)
	}
	conversation, err := agent.ConversationJSON()
	if err != nil || strings.Count(conversation, `"role":"user"`) != 1 {
		t.Errorf("one user message: %s (%v)", conversation, err)
	}

	push(t, `{"builder": {"name": "anthropic_text", "args": {"text": "SUMMARY: apples."}}}`)
	result, err := agent.Compact("", "Mention the fruit.")
	if err != nil {
		t.Fatal(err)
	}
	if result.Summary != "SUMMARY: apples." || result.MessagesSummarized != 1 || result.MessagesKept != 1 {
		t.Errorf("compaction %+v", result)
	}
	if info, err := session.Info(); err != nil || info.ID != agent.SessionID() {
		t.Errorf("session info %+v, %v", info, err)
	}
}
