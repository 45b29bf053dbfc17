package panto

import (
	"context"
	"strings"
	"testing"
)

const handSummary = "The user is Ada. She likes tea; a note of it was taken."

// TestConversationByHand builds a conversation (given as JSON, then appended to), compacts it
// with its own summary and resumes the session in a new agent: the model sees the system
// prompt, the summary and the kept messages, nothing older.
func TestConversationByHand(t *testing.T) {
	reset(t)
	rt, err := NewRuntime(0)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	dir := t.TempDir()
	store, err := OpenFileStore(rt, dir)
	if err != nil {
		t.Fatal(err)
	}
	session, err := store.Create()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mockConfig(t)
	defer cfg.Close()

	_, err = NewAgentWithConversation(cfg, session, `{"messages": [{"role": "user", "content": [{"type": "txt"}]}]}`)
	if !HasCode(err, CodeInvalidArgument) || !strings.Contains(err.Error(), "conversation_json: messages[0].content[0]") {
		t.Fatalf("a malformed conversation: %v", err)
	}
	agent, err := NewAgentWithConversation(cfg, session, `{"messages": [
		{"role": "system", "content": [{"type": "system", "text": "You are terse.", "mode": "append"}]},
		{"role": "user", "content": [{"type": "text", "text": "My name is Ada."}]},
		{"role": "assistant", "content": [{"type": "text", "text": "Hello, Ada."}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, message := range []string{
		`{"role": "user", "content": [{"type": "text", "text": "I like tea."}]}`,
		`{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_g1", "name": "note", "input": {"drink": "tea"}}]}`,
		`{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_g1", "content": [{"type": "text", "text": "noted"}], "is_error": false}]}`,
		`{"role": "assistant", "content": [{"type": "text", "text": "Noted: tea."}]}`,
		`{"role": "user", "content": [{"type": "text", "text": "What do I drink?"}]}`,
		`{"role": "assistant", "content": [{"type": "text", "text": "Tea."}]}`,
	} {
		if err := agent.AddMessageJSON(message); err != nil {
			t.Fatal(err)
		}
	}
	if err := agent.AddMessageJSON(`{"role": "bot", "content": []}`); !HasCode(err, CodeInvalidArgument) ||
		!strings.Contains(err.Error(), "message_json: role") {
		t.Fatalf("a malformed message: %v", err)
	}
	if _, err := agent.CompactWithSummary(handSummary, 5); !HasCode(err, CodeInvalidArgument) {
		t.Fatalf("a cut between a tool call and its result: %v", err)
	}
	result, err := agent.CompactWithSummary(handSummary, 7)
	if err != nil {
		t.Fatal(err)
	}
	if result.MessagesSummarized != 6 || result.MessagesKept != 2 || result.Summary != handSummary {
		t.Fatalf("compaction: %+v", result)
	}
	if n := len(requests(t)); n != 0 {
		t.Fatalf("building and compacting made %d requests", n)
	}
	id := agent.SessionID()
	agent.Close()
	session.Close()
	store.Close()

	// A new agent on the session as the store has it.
	push(t, `{"builder": {"name": "anthropic_text", "args": {"text": "Still tea."}}}`)
	store, err = OpenFileStore(rt, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	session, err = store.Resolve(id)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	resumed, err := NewAgent(cfg, session)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	run, err := resumed.Run(context.Background(), "And now?")
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := collect(t, run); text != "Still tea." || run.Err() != nil {
		t.Fatalf("resumed turn: %q, %v", text, run.Err())
	}
	reqs := requests(t)
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if err := contains(reqs[0].Body, "You are terse.", handSummary, "What do I drink?", "Tea.", "And now?"); err != nil {
		t.Error(err)
	}
	for _, gone := range []string{"My name is Ada.", "I like tea.", "toolu_g1"} {
		if strings.Contains(string(reqs[0].Body), gone) {
			t.Errorf("the summarised %q was sent: %s", gone, reqs[0].Body)
		}
	}
	if _, err := NewAgentWithConversation(cfg, session, `{"messages": []}`); !HasCode(err, CodeState) {
		t.Fatalf("a conversation for a session that holds messages: %v", err)
	}
}
