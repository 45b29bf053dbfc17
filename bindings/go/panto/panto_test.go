package panto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fixture is an agent on the mock, on a null store, closed at the end of the test.
func fixture(t *testing.T) *Agent {
	t.Helper()
	reset(t)
	return agentWith(t, mockConfig(t))
}

// agentWith is an agent with cfg (which it closes) on a new session of a null store. Everything
// but the agent goes at once, since the agent keeps what it needs; the agent is closed at the end
// of the test.
func agentWith(t *testing.T, cfg *Config) *Agent {
	t.Helper()
	rt, err := NewRuntime(2)
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewNullStore(rt)
	if err != nil {
		t.Fatal(err)
	}
	session, err := store.Create()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := NewAgent(cfg, session)
	if err != nil {
		t.Fatal(err)
	}
	// Everything but the agent may go at once: the agent keeps what it needs.
	cfg.Close()
	session.Close()
	store.Close()
	rt.Close()
	t.Cleanup(agent.Close)
	return agent
}

// fileSession is a new session of a file store in a temporary directory; the session, the store
// and their runtime are closed at the end of the test.
func fileSession(t *testing.T) *Session {
	t.Helper()
	rt, err := NewRuntime(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	store, err := OpenFileStore(rt, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	session, err := store.Create()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(session.Close)
	return session
}

// kindTypes is the JSON type of each kind (docs/ffi.md).
var kindTypes = map[EventKind]string{
	BlockStart:         "block_start",
	TextDelta:          "text_delta",
	ThinkingDelta:      "thinking_delta",
	ToolInputDelta:     "tool_input_delta",
	BlockComplete:      "block_complete",
	MessageComplete:    "message_complete",
	ToolStart:          "tool_start",
	ToolComplete:       "tool_complete",
	Retry:              "retry",
	CompactionStart:    "compaction_start",
	CompactionComplete: "compaction_complete",
	TurnComplete:       "turn_complete",
	Steer:              "steer",
	FollowUpStart:      "follow_up_start",
}

// collect reads a run to its end. Every event must carry the JSON type of its kind and match
// docs/events.schema.json (checked by the mock, with the validator the Rust tests use).
func collect(t *testing.T, run *Run) (text string, events []Event) {
	t.Helper()
	var b strings.Builder
	for ev := range run.Events() {
		events = append(events, ev)
		b.WriteString(ev.Text())
	}
	for i, ev := range events {
		if want, ok := kindTypes[ev.Kind]; !ok || ev.Type != want {
			t.Errorf("event %d: kind %d has type %q, want %q: %s", i+1, ev.Kind, ev.Type, want, ev.JSON)
		}
	}
	checkEvents(t, events)
	return b.String(), events
}

// kinds lists the kinds of events, in order.
func kinds(events []Event) []EventKind {
	out := make([]EventKind, len(events))
	for i, ev := range events {
		out[i] = ev.Kind
	}
	return out
}

func TestVersion(t *testing.T) {
	if Version() != HeaderVersion {
		t.Fatalf("library %s, header %s", Version(), HeaderVersion)
	}
}

func TestTurn(t *testing.T) {
	agent := fixture(t)
	push(t, `{"builder": {"name": "anthropic_text", "args": {"text": "Hello from Go's mock."}}, "chunking": "every_byte"}`)
	if err := agent.AddSystemMessage("You are a test."); err != nil {
		t.Fatal(err)
	}
	run, err := agent.Run(context.Background(), "Say hello")
	if err != nil {
		t.Fatal(err)
	}
	text, events := collect(t, run)
	if err := run.Err(); err != nil {
		t.Fatal(err)
	}
	if text != "Hello from Go's mock." {
		t.Errorf("text %q", text)
	}
	if events[0].Kind != BlockStart || events[len(events)-1].Kind != TurnComplete {
		t.Errorf("kinds %v", kinds(events))
	}
	var start struct {
		Index int
		Kind  string
		Tool  *struct{ ID, Name string }
	}
	if err := json.Unmarshal(events[0].JSON, &start); err != nil || start.Kind != "text" || start.Tool != nil {
		t.Errorf("block_start %s (%v)", events[0].JSON, err)
	}
	usage, err := agent.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if usage.OutputTokens == 0 || usage.CostMicroCents == nil || *usage.CostMicroCents == 0 {
		t.Errorf("usage %+v", usage)
	}
	reqs := requests(t)
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if err := contains(reqs[0].Body, `"Say hello"`, `You are a test.`); err != nil {
		t.Error(err)
	}
}

func TestTools(t *testing.T) {
	agent := fixture(t)
	push(t, `[{"builder": {"name": "anthropic_tool_uses", "args": {"calls": [
			{"id": "toolu_g1", "name": "get_weather", "input": {"city": "Paris"}},
			{"id": "toolu_g2", "name": "broken", "input": {}}]}}},
		{"builder": {"name": "anthropic_text", "args": {"text": "Sunny."}}}]`)
	var calls int32
	weather, err := NewTool("get_weather", "Weather for a city.", `{"type":"object"}`,
		func(input json.RawMessage) (string, error) {
			atomic.AddInt32(&calls, 1)
			var args struct{ City string }
			if err := json.Unmarshal(input, &args); err != nil {
				return "", err
			}
			return "sunny in " + args.City, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	broken, err := NewTool("broken", "Always fails.", `{"type":"object"}`,
		func(json.RawMessage) (string, error) {
			atomic.AddInt32(&calls, 1)
			return "", errors.New("the sensor is offline")
		})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []*Tool{weather, broken} {
		if err := agent.AddTool(tool); err != nil {
			t.Fatal(err)
		}
		tool.Close()
	}
	if _, err := NewTool("bad name", "", `{}`, nil); !HasCode(err, CodeInvalidArgument) {
		t.Errorf("a bad name gave %v", err)
	}

	run, err := agent.Run(context.Background(), "Weather?")
	if err != nil {
		t.Fatal(err)
	}
	text, events := collect(t, run)
	if err := run.Err(); err != nil {
		t.Fatal(err)
	}
	if text != "Sunny." || atomic.LoadInt32(&calls) != 2 {
		t.Errorf("text %q, %d calls, kinds %v", text, calls, kinds(events))
	}
	// The first call streams as a block naming the call, then fragments of its arguments.
	var arguments strings.Builder
	toolIndex := -1
	for _, ev := range events {
		var payload struct {
			Index       int
			Tool        *struct{ ID, Name string }
			PartialJSON string `json:"partial_json"`
		}
		if err := json.Unmarshal(ev.JSON, &payload); err != nil {
			t.Fatalf("%s: %v", ev.JSON, err)
		}
		switch {
		case ev.Kind == BlockStart && toolIndex < 0 && payload.Tool != nil:
			if payload.Tool.ID != "toolu_g1" || payload.Tool.Name != "get_weather" {
				t.Errorf("block_start %s", ev.JSON)
			}
			toolIndex = payload.Index
		case ev.Kind == ToolInputDelta && payload.Index == toolIndex:
			arguments.WriteString(payload.PartialJSON)
		}
	}
	var input struct{ City string }
	if err := json.Unmarshal([]byte(arguments.String()), &input); err != nil || input.City != "Paris" {
		t.Errorf("the argument fragments %q (%v)", arguments.String(), err)
	}
	reqs := requests(t)
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if err := contains(reqs[1].Body, `"tool_use_id":"toolu_g1"`, `sunny in Paris`, `the sensor is offline`,
		`"is_error":true`); err != nil {
		t.Error(err)
	}
}

// TestBuiltinTools adds panto's coding tools in one call: the model writes a file and greps for
// it, and a deny rule stops bash.
func TestBuiltinTools(t *testing.T) {
	agent := fixture(t)
	dir := t.TempDir()
	push(t, `[{"builder": {"name": "anthropic_tool_uses", "args": {"calls": [
			{"id": "toolu_b1", "name": "write", "input": {"path": "notes.txt", "content": "the needle is here\n"}}]}}},
		{"builder": {"name": "anthropic_tool_uses", "args": {"calls": [
			{"id": "toolu_b2", "name": "grep", "input": {"pattern": "needle"}},
			{"id": "toolu_b3", "name": "bash", "input": {"command": "rm notes.txt"}}]}}},
		{"builder": {"name": "anthropic_text", "args": {"text": "Noted."}}}]`)
	if err := agent.AddBuiltinTools(BuiltinToolOptions{Tools: []string{"rm"}}); !HasCode(err, CodeConfig) ||
		!strings.Contains(err.Error(), "tools[0]") {
		t.Errorf("an unknown tool gave %v", err)
	}
	opts := BuiltinToolOptions{Cwd: dir, Tools: []string{"write", "grep", "bash"}, Deny: []string{"bash(rm *)"}}
	if err := agent.AddBuiltinTools(opts); err != nil {
		t.Fatal(err)
	}
	run, err := agent.Run(context.Background(), "Take a note and find it.")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := collect(t, run)
	if err := run.Err(); err != nil {
		t.Fatal(err)
	}
	if text != "Noted." {
		t.Errorf("text %q", text)
	}
	body, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	if err != nil || string(body) != "the needle is here\n" {
		t.Errorf("notes.txt: %q (%v)", body, err)
	}
	reqs := requests(t)
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if err := contains(reqs[2].Body, `notes.txt:1:the needle is here`, "denied by the rule `bash(rm *)`"); err != nil {
		t.Error(err)
	}
}

// TestResume writes a session, then resumes it in a second process (this test binary running
// TestResumeChild) whose request must carry the history.
func TestResume(t *testing.T) {
	reset(t)
	dir := t.TempDir()
	push(t, `{"builder": {"name": "anthropic_text", "args": {"text": "I will remember 42."}}}`)
	rt, err := NewRuntime(0)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	store, err := OpenFileStore(rt, dir)
	if err != nil {
		t.Fatal(err)
	}
	session, err := store.Create()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mockConfig(t)
	agent, err := NewAgent(cfg, session)
	if err != nil {
		t.Fatal(err)
	}
	run, err := agent.Run(context.Background(), "Remember the number 42.")
	if err != nil {
		t.Fatal(err)
	}
	collect(t, run)
	if err := run.Err(); err != nil {
		t.Fatal(err)
	}
	id := agent.SessionID()
	infos, err := store.List()
	if err != nil || len(infos) != 1 || infos[0].ID != id || infos[0].MessageCount != 2 {
		t.Fatalf("list: %+v, %v", infos, err)
	}
	// Close everything so the second process can take the session.
	agent.Close()
	session.Close()
	store.Close()
	cfg.Close()

	child := exec.Command(os.Args[0], "-test.run=^TestResumeChild$", "-test.count=1")
	child.Env = append(os.Environ(), "PANTO_RESUME_DIR="+dir, "PANTO_RESUME_PREFIX="+id[:13])
	out, err := child.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "resumed "+id) {
		t.Fatalf("the resuming process failed: %v\n%s", err, out)
	}
	reqs := requests(t)
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if err := contains(reqs[1].Body, "Remember the number 42.", "I will remember 42.", "Which number?"); err != nil {
		t.Error(err)
	}
}

func TestResumeChild(t *testing.T) {
	dir := os.Getenv("PANTO_RESUME_DIR")
	if dir == "" {
		t.Skip("run by TestResume in a second process")
	}
	push(t, `{"builder": {"name": "anthropic_text", "args": {"text": "42."}}}`)
	rt, err := NewRuntime(0)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	store, err := OpenFileStore(rt, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	session, err := store.Resolve(os.Getenv("PANTO_RESUME_PREFIX"))
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if _, err := store.Resolve("ffffffff"); !HasCode(err, CodeSessionNotFound) {
		t.Errorf("an unknown session gave %v", err)
	}
	cfg := mockConfig(t)
	defer cfg.Close()
	agent, err := NewAgent(cfg, session)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	conversation, err := agent.ConversationJSON()
	if err != nil || !strings.Contains(conversation, "I will remember 42.") {
		t.Fatalf("resumed conversation %s (%v)", conversation, err)
	}
	run, err := agent.Run(context.Background(), "Which number?")
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := collect(t, run); text != "42." || run.Err() != nil {
		t.Fatalf("text %q, err %v", text, run.Err())
	}
	t.Log("resumed " + session.ID())
	os.Stdout.WriteString("resumed " + session.ID() + "\n")
}

func TestCancel(t *testing.T) {
	agent := fixture(t)

	// Cancelling the context ends a turn whose provider never answers.
	push(t, `{"hang": true}`)
	ctx, cancel := context.WithCancel(context.Background())
	run, err := agent.Run(ctx, "Hello?")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(context.Background(), "again"); !HasCode(err, CodeBusy) {
		t.Errorf("a second run gave %v", err)
	}
	time.AfterFunc(100*time.Millisecond, cancel)
	collect(t, run)
	if !HasCode(run.Err(), CodeCancelled) {
		t.Fatalf("expected a cancellation, got %v", run.Err())
	}
	run.Cancel() // after the end: harmless

	// A cancel while a Go tool runs: the run ends only after the tool returns.
	var returned atomic.Bool
	started := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	slow, err := NewTool("slow", "Takes its time.", `{"type":"object"}`, func(json.RawMessage) (string, error) {
		once.Do(func() { close(started) })
		<-release
		returned.Store(true)
		return "done", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if err := agent.AddTool(slow); err != nil {
		t.Fatal(err)
	}
	push(t, `{"builder": {"name": "anthropic_tool_uses", "args": {"calls": [{"id": "toolu_s", "name": "slow", "input": {}}]}}}`)
	run, err = agent.Run(context.Background(), "Slowly.")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-started
		run.Cancel()
		time.Sleep(200 * time.Millisecond)
		close(release)
	}()
	collect(t, run)
	if !HasCode(run.Err(), CodeCancelled) {
		t.Fatalf("expected a cancellation, got %v", run.Err())
	}
	if !returned.Load() {
		t.Fatal("the run ended while its tool was still running")
	}

	// The agent takes the next turn.
	push(t, `{"builder": {"name": "anthropic_text", "args": {"text": "Back."}}}`)
	run, err = agent.Run(context.Background(), "Still there?")
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := collect(t, run); text != "Back." || run.Err() != nil {
		t.Fatalf("text %q, err %v", text, run.Err())
	}
}

func TestErrors(t *testing.T) {
	if _, err := NewConfig(`{"provider": {"api_style": "openai-chat", "base_url": "x"}}`); !HasCode(err, CodeConfig) ||
		!strings.Contains(err.Error(), "missing field `model`") {
		t.Errorf("config error: %v", err)
	}
	if _, err := NewConfig("{\"provider\": \"\xff\"}"); !HasCode(err, CodeUTF8) {
		t.Errorf("bad UTF-8: %v", err)
	}
}

// TestErrorDetail reads the field a config error is about, and the HTTP status and retry-after
// of a provider failure, without parsing messages.
func TestErrorDetail(t *testing.T) {
	_, err := NewConfig(`{"provider": {"api_style": "sk-ant-api03-AbCdEf0123456789", "base_url": "x", "model": "m"}}`)
	e, ok := err.(*Error)
	if !ok || e.Field() != "provider.api_style" || strings.Contains(e.Message, "AbCdEf0123456789") {
		t.Fatalf("config error: %v (field %q)", err, e.Field())
	}
	if e.HTTPStatus() != 0 {
		t.Errorf("a config error has HTTP status %d", e.HTTPStatus())
	}
	if _, said := e.RetryAfter(); said {
		t.Errorf("a config error has a retry-after")
	}

	reset(t)
	push(t, `[{"status": 429, "headers": [["retry-after", "7"]], "json": {"type": "error",
		"error": {"type": "rate_limit_error", "message": "slow down"}}}]`)
	cfg, err := NewConfig(fmt.Sprintf(`{"provider": {"api_style": "anthropic-messages", "base_url": %q,
		"model": "claude-sonnet-4-5", "api_key": "k"}, "retry": {"max_attempts": 1},
		"compaction": {"enabled": false}}`, mockURL))
	if err != nil {
		t.Fatal(err)
	}
	agent := agentWith(t, cfg)
	run, err := agent.Run(context.Background(), "hi")
	if err != nil {
		t.Fatal(err)
	}
	collect(t, run)
	e, ok = run.Err().(*Error)
	if !ok || e.Code != CodeProvider || e.HTTPStatus() != 429 {
		t.Fatalf("run error: %v", run.Err())
	}
	if wait, said := e.RetryAfter(); !said || wait != 7*time.Second {
		t.Errorf("retry-after %v (said %v), want 7s", wait, said)
	}
	if e.Field() != "" {
		t.Errorf("a provider error names the field %q", e.Field())
	}
}

// TestResponses runs a turn over the OpenAI Responses API: the config accepts the style, the
// reasoning summary streams as thinking, and the next request carries the encrypted reasoning
// back (the mock checks it as the API would).
func TestResponses(t *testing.T) {
	reset(t)
	cfg, err := NewConfig(fmt.Sprintf(`{"provider": {"api_style": "openai-responses", "base_url": "%s/v1",
		"model": "gpt-5", "api_key": "test-key", "reasoning": "medium"}, "retry": {"max_attempts": 1}}`, mockURL))
	if err != nil {
		t.Fatal(err)
	}
	agent := agentWith(t, cfg)
	push(t, `{"builder": {"name": "responses_reasoning", "args": {"summary": "**Greeting**",
		"encrypted_content": "gAAAAB-go", "text": "Hello over Responses."}}, "chunking": "every_byte"}`)
	push(t, `{"builder": {"name": "responses_text", "args": {"text": "Again."}}}`)
	for i, prompt := range []string{"Say hello", "Again"} {
		run, err := agent.Run(context.Background(), prompt)
		if err != nil {
			t.Fatal(err)
		}
		text, events := collect(t, run)
		if err := run.Err(); err != nil {
			t.Fatal(err)
		}
		// collect joins thinking and text deltas: the summary streams as thinking first.
		if i == 0 && (text != "**Greeting**Hello over Responses." || events[1].Kind != ThinkingDelta) {
			t.Errorf("text %q, kinds %v", text, kinds(events))
		}
	}
	reqs := requests(t)
	if len(reqs) != 2 || reqs[1].Path != "/v1/responses" {
		t.Fatalf("requests %+v", reqs)
	}
	if err := contains(reqs[1].Body, `"type":"reasoning"`, `"encrypted_content":"gAAAAB-go"`, `"store":false`); err != nil {
		t.Error(err)
	}
}

// TestSteerAndFollowUp steers a run from a tool's function (the steer waits for the tool's
// result and is in the very next request, after it) and queues a follow-up that runs as a second
// turn on the same run.
func TestSteerAndFollowUp(t *testing.T) {
	agent := fixture(t)
	push(t, `[{"builder": {"name": "anthropic_tool_uses", "args": {"calls": [
			{"id": "toolu_s1", "name": "lookup", "input": {}}]}}},
		{"builder": {"name": "anthropic_text", "args": {"text": "Found it."}}},
		{"builder": {"name": "anthropic_text", "args": {"text": " Summarised."}}}]`)
	var run *Run
	var steerErr error
	ready := make(chan struct{})
	lookup, err := NewTool("lookup", "Looks something up.", `{"type":"object"}`,
		func(json.RawMessage) (string, error) {
			<-ready
			steerErr = run.Steer("Only the 2024 figures.")
			return "figures", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.AddTool(lookup); err != nil {
		t.Fatal(err)
	}
	lookup.Close()
	run, err = agent.Run(context.Background(), "Find the figures.")
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	if err := run.FollowUp("Now summarise them."); err != nil {
		t.Fatal(err)
	}
	text, events := collect(t, run)
	if err := run.Err(); err != nil || steerErr != nil {
		t.Fatalf("run %v, steer %v", err, steerErr)
	}
	if text != "Found it. Summarised." {
		t.Errorf("text %q", text)
	}
	var marks []EventKind
	for _, ev := range events {
		switch ev.Kind {
		case ToolComplete, Steer, TurnComplete, FollowUpStart:
			marks = append(marks, ev.Kind)
		}
	}
	want := []EventKind{ToolComplete, Steer, TurnComplete, FollowUpStart, TurnComplete}
	if fmt.Sprint(marks) != fmt.Sprint(want) {
		t.Errorf("kinds %v, want %v", marks, want)
	}
	reqs := requests(t)
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if strings.Contains(string(reqs[0].Body), "2024") {
		t.Errorf("the first request predates the steer: %s", reqs[0].Body)
	}
	result := strings.Index(string(reqs[1].Body), `"tool_use_id":"toolu_s1"`)
	steer := strings.Index(string(reqs[1].Body), `Only the 2024 figures.`)
	if result < 0 || steer < result {
		t.Errorf("the second request has the result, then the steer: %s", reqs[1].Body)
	}
	if !strings.Contains(string(reqs[2].Body), "Now summarise them.") {
		t.Errorf("the third request asks the follow-up: %s", reqs[2].Body)
	}
	if err := run.Steer("too late"); !HasCode(err, CodeState) {
		t.Errorf("a steer after the end gave %v", err)
	}
}

// TestMCPServers calls a tool of a real MCP server (the everything server, installed by `cargo
// xtask mcp-servers`; `cargo xtask ffi-test go` passes its path in PANTO_MCP_EVERYTHING): its
// real answer reaches the model, and a server that does not start is a warning naming it.
func TestMCPServers(t *testing.T) {
	everything := os.Getenv("PANTO_MCP_EVERYTHING")
	if everything == "" {
		t.Fatal("PANTO_MCP_EVERYTHING is not set: run this through `cargo xtask ffi-test go`, after " +
			"`cargo xtask mcp-servers` installed the real MCP servers")
	}
	agent := fixture(t)
	push(t, `[{"builder": {"name": "anthropic_tool_uses", "args": {"calls": [
			{"id": "toolu_m1", "name": "everything__get-sum", "input": {"a": 4000, "b": 2}}]}}},
		{"builder": {"name": "anthropic_text", "args": {"text": "Summed."}}}]`)
	if _, err := agent.AddMCPServers(MCPOptions{Servers: []MCPServer{{Name: "x", URL: "ftp://nowhere"}}}); !HasCode(err, CodeConfig) ||
		!strings.Contains(err.Error(), "not an http") {
		t.Errorf("a bad url gave %v", err)
	}
	warnings, err := agent.AddMCPServers(MCPOptions{Servers: []MCPServer{
		{Name: "everything", Command: everything, Args: []string{"stdio"}},
		{Name: "broken", Command: "/bin/sh", Args: []string{"-c", "echo go-side-boom >&2; exit 3"}},
		{Name: "off", Command: "never-run", Disabled: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "MCP server `broken`") || !strings.Contains(warnings[0], "go-side-boom") {
		t.Errorf("warnings %q", warnings)
	}
	run, err := agent.Run(context.Background(), "Add them.")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := collect(t, run)
	if err := run.Err(); err != nil {
		t.Fatal(err)
	}
	if text != "Summed." {
		t.Errorf("text %q", text)
	}
	reqs := requests(t)
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if err := contains(reqs[1].Body, "4002"); err != nil {
		t.Error(err)
	}
}
