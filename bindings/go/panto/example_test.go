package panto_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"example.invalid/panto/bindings/go/panto"
)

// Example streams one turn in which the model calls a tool written in Go. Against a real
// provider, set base_url to its address and the key's variable in api_key_env.
func Example() {
	scriptMock() // the tests' mock server: one tool call, then the answer
	baseURL := os.Getenv("PANTO_BASE_URL")

	rt, err := panto.NewRuntime(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	cfg, err := panto.NewConfig(fmt.Sprintf(`{"provider": {"api_style": "anthropic-messages",
		"base_url": %q, "model": "claude-sonnet-4-5", "api_key": "test-key"}}`, baseURL))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cfg.Close()
	store, err := panto.NewNullStore(rt) // panto.OpenFileStore(rt, dir) persists sessions
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	session, err := store.Create()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer session.Close()
	agent, err := panto.NewAgent(cfg, session)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer agent.Close()

	weather, err := panto.NewTool("get_weather", "The current weather in a city.",
		`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`,
		func(input json.RawMessage) (string, error) {
			var args struct{ City string }
			if err := json.Unmarshal(input, &args); err != nil {
				return "", err // the model sees a failed call
			}
			return "sunny in " + args.City, nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer weather.Close()
	if err := agent.AddTool(weather); err != nil {
		fmt.Println(err)
		return
	}

	run, err := agent.Run(context.Background(), "What is the weather in Paris?")
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev := range run.Events() {
		switch ev.Kind {
		case panto.TextDelta:
			fmt.Print(ev.Text())
		case panto.ToolStart:
			call, _ := ev.ToolCall()
			fmt.Printf("[%s %s]\n", call.Name, call.Input)
		}
	}
	fmt.Println()
	if err := run.Err(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// [get_weather {"city":"Paris"}]
	// It is sunny in Paris.
}

// scriptMock queues the example's replies on the mock server the tests started.
func scriptMock() {
	mock := os.Getenv("PANTO_MOCK_URL")
	for _, step := range [][2]string{
		{"/__mock/reset", `{}`},
		{"/__mock/push", `[{"builder": {"name": "anthropic_tool_uses", "args": {"calls": [
			{"id": "toolu_e1", "name": "get_weather", "input": {"city": "Paris"}}]}}},
			{"builder": {"name": "anthropic_text", "args": {"text": "It is sunny in Paris."}}}]`},
	} {
		resp, err := http.Post(mock+step[0], "application/json", strings.NewReader(step[1]))
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
}
