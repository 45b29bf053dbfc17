package panto

/*
#include <stdlib.h>
#include "panto.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MCPServer is one MCP server whose tools the agent offers as "<Name>__<tool>": a program
// panto starts and talks to over stdio (Command), or a streamable HTTP endpoint (URL). The
// fields are the CLI's [mcp.servers.NAME] keys (docs/mcp.md); zero values mean the defaults.
type MCPServer struct {
	Name               string            `json:"-"`
	Command            string            `json:"command,omitempty"`
	Args               []string          `json:"args,omitempty"`
	Env                map[string]string `json:"env,omitempty"`
	ScrubEnv           []string          `json:"scrub_env,omitempty"` // variables kept from a stdio server, besides the well-known key variables
	Cwd                string            `json:"cwd,omitempty"`
	URL                string            `json:"url,omitempty"`
	Headers            map[string]string `json:"headers,omitempty"`
	BearerTokenEnv     string            `json:"bearer_token_env,omitempty"` // the variable's name, never the token
	Disabled           bool              `json:"-"`
	StartupTimeoutSecs uint64            `json:"startup_timeout_secs,omitempty"`
	ToolTimeoutSecs    uint64            `json:"tool_timeout_secs,omitempty"`
	AllowedTools       []string          `json:"allowed_tools,omitempty"` // globs over the server's tool names
	DeniedTools        []string          `json:"denied_tools,omitempty"`
	StderrLog          string            `json:"stderr_log,omitempty"` // a file the server's stderr is appended to
}

// MCPOptions are the servers to add, in the order their tools are offered, and how. The calls
// of their tools pass the config's "policy" (rules and command hooks by "server__tool" name;
// docs/ffi.md), as the built-in tools' calls do.
type MCPOptions struct {
	Servers        []MCPServer
	ReadOnly       bool // offer only tools the server annotates readOnlyHint
	MaxResultBytes int  // cap on one result's text (0: the built-in tools' cap)
}

// MarshalJSON writes the options as panto_agent_add_mcp_servers reads them: the servers as one
// object, in slice order (a Go map would lose it).
func (o MCPOptions) MarshalJSON() ([]byte, error) {
	type server struct {
		MCPServer
		Enabled *bool `json:"enabled,omitempty"`
	}
	var b bytes.Buffer
	b.WriteString(`{"servers":{`)
	for i, s := range o.Servers {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(s.Name)
		if err != nil {
			return nil, err
		}
		wire := server{MCPServer: s}
		if s.Disabled {
			wire.Enabled = new(bool)
		}
		body, err := json.Marshal(wire)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(body)
	}
	fmt.Fprintf(&b, `},"read_only":%t`, o.ReadOnly)
	if o.MaxResultBytes > 0 {
		fmt.Fprintf(&b, `,"max_result_bytes":%d`, o.MaxResultBytes)
	}
	b.WriteString(`}`)
	return b.Bytes(), nil
}

// AddMCPServers starts the servers (in parallel) and offers their tools to the model. A server
// that does not start is not an error: the others are added, and warnings holds one entry per
// server that did not start, naming it and quoting the end of its stderr (which may span lines). The servers stop when
// the agent is closed.
func (a *Agent) AddMCPServers(opts MCPOptions) (warnings []string, err error) {
	body, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	cjson := cstring(string(body))
	defer free(cjson)
	var cwarnings *C.char
	var cerr *C.panto_error
	if err := check(C.panto_agent_add_mcp_servers(a.p, cjson, &cwarnings, &cerr), cerr); err != nil {
		return nil, err
	}
	if cwarnings != nil {
		if err := json.Unmarshal([]byte(takeString(cwarnings)), &warnings); err != nil {
			return nil, fmt.Errorf("panto: the MCP start-up warnings are not a JSON array: %w", err)
		}
	}
	return warnings, nil
}
