package panto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mockURL is the base URL of the panto-mock server TestMain starts (or, in a child process of
// the resume test, the one its parent started).
var mockURL string

// TestMain starts the mock LLM server (`panto-mock`, built by `cargo xtask ffi-test`; override
// its path with PANTO_MOCK_BIN) for the whole package, and stops it after.
func TestMain(m *testing.M) {
	if url := os.Getenv("PANTO_MOCK_URL"); url != "" {
		mockURL = url
		os.Setenv("PANTO_BASE_URL", mockURL) // for Example
		os.Exit(m.Run())
	}
	bin := os.Getenv("PANTO_MOCK_BIN")
	if bin == "" {
		bin = filepath.Join("..", "..", "..", "target", "debug", "panto-mock")
	}
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock stdin:", err)
		os.Exit(1)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock stdout:", err)
		os.Exit(1)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot start %s (build it with `cargo xtask ffi-test`): %v\n", bin, err)
		os.Exit(1)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "PORT=") {
		fmt.Fprintf(os.Stderr, "the mock said %q (%v), not PORT=<n>\n", line, err)
		os.Exit(1)
	}
	mockURL = "http://127.0.0.1:" + strings.TrimSpace(strings.TrimPrefix(line, "PORT="))
	os.Setenv("PANTO_MOCK_URL", mockURL) // for the resume test's second process
	os.Setenv("PANTO_BASE_URL", mockURL) // for Example
	code := m.Run()
	stdin.Close() // the mock serves until its stdin closes
	_ = cmd.Wait()
	os.Exit(code)
}

func control(t *testing.T, method, path, body string) []byte {
	t.Helper()
	req, err := http.NewRequest(method, mockURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %s: %s", method, path, resp.Status, out)
	}
	return out
}

// push queues replies (a JSON reply or array of replies, see panto-mock).
func push(t *testing.T, reply string) { control(t, "POST", "/__mock/push", reply) }

// reset forgets queued replies and recorded requests.
func reset(t *testing.T) { control(t, "POST", "/__mock/reset", "{}") }

// recorded is one request the mock recorded.
type recorded struct {
	Index      int             `json:"index"`
	Path       string          `json:"path"`
	Headers    [][2]string     `json:"headers"`
	Body       json.RawMessage `json:"body"`
	Validation *string         `json:"validation"`
}

func requests(t *testing.T) []recorded {
	t.Helper()
	var out []recorded
	if err := json.Unmarshal(control(t, "GET", "/__mock/requests", ""), &out); err != nil {
		t.Fatal(err)
	}
	for _, r := range out {
		if r.Validation != nil {
			t.Errorf("request %d broke the API's rules: %s", r.Index, *r.Validation)
		}
	}
	return out
}

func contains(body json.RawMessage, parts ...string) error {
	for _, p := range parts {
		if !bytes.Contains(body, []byte(p)) {
			return fmt.Errorf("missing %q in %s", p, body)
		}
	}
	return nil
}

func mockConfig(t *testing.T) *Config {
	t.Helper()
	cfg, err := NewConfig(fmt.Sprintf(`{"provider": {"api_style": "anthropic-messages", "base_url": %q,
		"model": "claude-sonnet-4-5", "api_key": "test-key"}, "retry": {"max_attempts": 1},
		"compaction": {"enabled": false}}`, mockURL))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// checkEvents has the mock validate events against docs/events.schema.json (POST
// /__mock/check-events, the validator every Rust test uses); a mismatch fails the test with the
// event and the field at fault.
func checkEvents(t *testing.T, events []Event) {
	t.Helper()
	all := make([]json.RawMessage, len(events))
	for i, ev := range events {
		all[i] = ev.JSON
	}
	body, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	control(t, "POST", "/__mock/check-events", string(body))
}
