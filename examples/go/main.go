// Command weather is a Go program on libpanto: one streamed turn in which the model calls a tool
// written in Go.
//
// Build against an installed libpanto (docs/ffi.md, "Install and link", then "Go"):
//
//	export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
//	go build -o weather .
//	ANTHROPIC_API_KEY=sk-... ./weather "What is the weather in Paris?"
//
// PANTO_BASE_URL replaces https://api.anthropic.com (CI points it at the mock server).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"example.invalid/panto/bindings/go/panto"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	prompt := "What is the weather in Paris?"
	if len(os.Args) > 1 {
		prompt = os.Args[1]
	}
	baseURL := os.Getenv("PANTO_BASE_URL")
	if baseURL == "" {
		baseURL = "https://api.anthropic.com"
	}
	rt, err := panto.NewRuntime(0)
	if err != nil {
		return err
	}
	defer rt.Close()
	cfg, err := panto.NewConfig(fmt.Sprintf(`{"provider": {"api_style": "anthropic-messages",
		"base_url": %q, "model": "claude-sonnet-4-5", "api_key_env": "ANTHROPIC_API_KEY"}}`, baseURL))
	if err != nil {
		return err
	}
	defer cfg.Close()
	store, err := panto.NewNullStore(rt)
	if err != nil {
		return err
	}
	defer store.Close()
	session, err := store.Create()
	if err != nil {
		return err
	}
	defer session.Close()
	agent, err := panto.NewAgent(cfg, session)
	if err != nil {
		return err
	}
	defer agent.Close()

	weather, err := panto.NewTool("get_weather", "The current weather in a city.",
		`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`,
		func(input json.RawMessage) (string, error) {
			var args struct{ City string }
			if err := json.Unmarshal(input, &args); err != nil {
				return "", err // the model sees a failed call
			}
			return "Sunny and 21C in " + args.City, nil
		})
	if err != nil {
		return err
	}
	defer weather.Close()
	if err := agent.AddTool(weather); err != nil {
		return err
	}

	run, err := agent.Run(context.Background(), prompt)
	if err != nil {
		return err
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
	// On an error the prompt stays in the conversation: agent.Retry asks again.
	return run.Err()
}
