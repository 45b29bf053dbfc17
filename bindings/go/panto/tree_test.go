package panto

import (
	"bytes"
	"context"
	"testing"
)

// runOK runs one turn to its end, failing the test on an error.
func runOK(t *testing.T, agent *Agent, text string) {
	t.Helper()
	run, err := agent.Run(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	collect(t, run)
	if err := run.Err(); err != nil {
		t.Fatal(err)
	}
}

func answerWith(t *testing.T, text string) {
	push(t, `{"builder": {"name": "anthropic_text", "args": {"text": "`+text+`"}}}`)
}

// TestRewindAndFork: message ids are strings, a rewind two prompts back sends only the new
// branch, and a fork is a new session that names its origin and sends only its path.
func TestRewindAndFork(t *testing.T) {
	reset(t)
	session := fileSession(t)
	cfg := mockConfig(t)
	defer cfg.Close()
	agent, err := NewAgent(cfg, session)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for _, qa := range [][2]string{{"ask-one", "ans-one"}, {"ask-two", "ans-two"}, {"ask-three", "ans-three"}} {
		answerWith(t, qa[1])
		runOK(t, agent, qa[0])
	}
	ids, err := agent.MessageIDs()
	if err != nil || len(ids) != 6 {
		t.Fatalf("ids %v, %v", ids, err)
	}
	if err := agent.Rewind(ids[1]); !HasCode(err, CodeState) {
		t.Fatalf("rewinding to an answer gave %v", err)
	}
	if err := agent.Rewind(ids[2]); err != nil {
		t.Fatal(err)
	}
	answerWith(t, "ans-two-again")
	runOK(t, agent, "ask-two-again")
	reqs := requests(t)
	last := reqs[len(reqs)-1].Body
	if err := contains(last, "ask-one", "ans-one", "ask-two-again"); err != nil {
		t.Error(err)
	}
	if bytes.Contains(last, []byte("ask-three")) || bytes.Contains(last, []byte(`"ask-two"`)) {
		t.Errorf("the abandoned branch was sent: %s", last)
	}

	fork, err := session.Fork(ids[1])
	if err != nil {
		t.Fatal(err)
	}
	defer fork.Close()
	info, err := fork.Info()
	if err != nil || info.ForkedFrom == nil || info.ForkedFrom.Session != session.ID() || info.ForkedFrom.Entry != ids[1] {
		t.Fatalf("fork info %+v, %v", info, err)
	}
	forked, err := NewAgent(cfg, fork)
	if err != nil {
		t.Fatal(err)
	}
	defer forked.Close()
	answerWith(t, "ans-fork")
	runOK(t, forked, "ask-in-fork")
	reqs = requests(t)
	last = reqs[len(reqs)-1].Body
	if err := contains(last, "ask-one", "ans-one", "ask-in-fork"); err != nil {
		t.Error(err)
	}
	if bytes.Contains(last, []byte("ask-two")) {
		t.Errorf("the fork sent more than its path: %s", last)
	}
}
