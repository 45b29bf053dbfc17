#!/usr/bin/env python3
"""SDK check: the official Anthropic and OpenAI Python SDKs accept what panto-mock serves.

Every provider fixture and every scripted builder of the mock is pushed to a running panto-mock
and then
  1. fetched raw, split into SSE events, and every event validated against the SDK's own types
     (anthropic.types.RawMessageStreamEvent, openai.types.chat.ChatCompletionChunk,
     openai.types.responses.ResponseStreamEvent);
  2. consumed with the SDK's streaming API pointed at the mock (messages.stream(...) and
     get_final_message(); chat.completions.create(stream=True) accumulated by hand, and
     chat.completions.stream(...).get_final_completion(); responses.create(stream=True) and
     responses.stream(...).get_final_response()), and the result compared with what the
     raw events said (and, for builders, with what was scripted).
Error fixtures must make the SDK raise its APIStatusError. Every request the SDKs send must also
pass the mock's own request validation.

Run by `cargo xtask sdk-check`, or by hand against a running mock:
    python3 check.py --base-url http://127.0.0.1:PORT --fixtures crates/panto-testkit/fixtures/wire
Prints one line per case and a final "N passed, N failed" line; exits 1 on any failure.
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

import anthropic
import openai
import pydantic
from anthropic.types import ErrorResponse, RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

ANTHROPIC_EVENT = pydantic.TypeAdapter(RawMessageStreamEvent)
ANTHROPIC_ERROR = pydantic.TypeAdapter(ErrorResponse)
PROMPT = [{"role": "user", "content": "Hello"}]
# The redacted-thinking fragment's message_start is `{"message": {}}`, which is not wire-valid
# (see the fixtures README); nothing else is skipped.
SKIPPED_FIXTURES = {"anthropic/redacted-thinking-sdk-test-fragment.sse"}


class CaseFailure(Exception):
    """A case found something wrong; the message says what."""


def expect(condition, message):
    if not condition:
        raise CaseFailure(message)


# ----------------------------------------------------------------------------------------------
# The mock's control API.


class Mock:
    def __init__(self, base_url):
        self.base = base_url.rstrip("/")

    def _call(self, method, path, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def push(self, reply):
        status, body = self._call("POST", "/__mock/push", reply)
        if status != 200:
            raise CaseFailure(f"the mock refused the reply {reply}: {body.decode(errors='replace')}")

    def requests(self):
        return json.loads(self._call("GET", "/__mock/requests")[1])

    def reset(self):
        self._call("POST", "/__mock/reset", {})

    def builders(self):
        return json.loads(self._call("GET", "/__mock/builders")[1])

    def raw(self, api, reply):
        """Pushes `reply` and fetches it with a plain, valid request: (status, body bytes)."""
        self.push(reply)
        if api == "anthropic":
            path = "/v1/messages"
            headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
            body = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "stream": True, "messages": PROMPT}
        elif api == "responses":
            path = "/v1/responses"
            headers = {"authorization": "Bearer sk-test"}
            body = {"model": "gpt-5", "stream": True, "store": False, "input": PROMPT}
        else:
            path = "/v1/chat/completions"
            headers = {"authorization": "Bearer sk-test"}
            body = {"model": "gpt-4o", "stream": True, "messages": PROMPT}
        headers["content-type"] = "application/json"
        return self._call("POST", path, body, headers)


# ----------------------------------------------------------------------------------------------
# Raw SSE.


def sse_events(body):
    """(event, data) pairs of an SSE body, per the SSE rules panto follows too."""
    text = body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    events, name, data = [], "", []
    for line in text.split("\n") + [""]:
        if line == "":
            if data:
                events.append((name, "\n".join(data)))
            name, data = "", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
    return events


def check_anthropic_raw(body):
    """Validates every event; returns (per-block text/thinking/input strings, saw an error event)."""
    blocks, errored = {}, False
    for name, data in sse_events(body):
        payload = json.loads(data)
        if name == "ping":
            expect(payload == {"type": "ping"}, f"odd ping {data}")
            continue
        if name == "error":
            ANTHROPIC_ERROR.validate_python(payload)
            errored = True
            continue
        event = ANTHROPIC_EVENT.validate_python(payload)
        expect(event.type == name, f"event: {name} carries a {event.type} payload")
        if event.type == "content_block_start":
            blocks[event.index] = ""
        elif event.type == "content_block_delta":
            d = event.delta
            piece = getattr(d, "text", None) or getattr(d, "thinking", None) or getattr(d, "partial_json", None)
            blocks[event.index] += piece or ""
    return blocks, errored


def check_openai_raw(body):
    """Validates every chunk; returns (content, reasoning, {index: (id, name, args)}, finish, done)."""
    content, reasoning, calls, finish, done = "", "", {}, None, False
    for _, data in sse_events(body):
        expect(not done, "data after [DONE]")
        if data == "[DONE]":
            done = True
            continue
        chunk = ChatCompletionChunk.model_validate(json.loads(data))
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            finish = choice.finish_reason or finish
            d = choice.delta
            content += d.content or ""
            extra = d.model_extra or {}
            reasoning += extra.get("reasoning_content") or extra.get("reasoning") or ""
            for call in d.tool_calls or []:
                cid, name, args = calls.get(call.index, (None, None, ""))
                cid = call.id or cid
                name = (call.function and call.function.name) or name
                args += (call.function and call.function.arguments) or ""
                calls[call.index] = (cid, name, args)
    return content, reasoning, calls, finish, done


# ----------------------------------------------------------------------------------------------
# SDK consumption.


def anthropic_client(mock):
    return anthropic.Anthropic(base_url=mock.base, api_key="sk-ant-test", max_retries=0, timeout=30)


def openai_client(mock):
    return openai.OpenAI(base_url=mock.base + "/v1", api_key="sk-test", max_retries=0, timeout=30)


def sdk_anthropic(mock, reply):
    mock.push(reply)
    with anthropic_client(mock).messages.stream(
        model="claude-sonnet-4-6", max_tokens=1024, messages=PROMPT
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


def sdk_openai_create(mock, reply):
    """chat.completions.create(stream=True), accumulated by hand."""
    mock.push(reply)
    stream = openai_client(mock).chat.completions.create(
        model="gpt-4o", messages=PROMPT, stream=True, stream_options={"include_usage": True}
    )
    content, reasoning, calls, finish, usage = "", "", {}, None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            finish = choice.finish_reason or finish
            d = choice.delta
            content += d.content or ""
            extra = d.model_extra or {}
            reasoning += extra.get("reasoning_content") or extra.get("reasoning") or ""
            for call in d.tool_calls or []:
                cid, name, args = calls.get(call.index, (None, None, ""))
                calls[call.index] = (
                    call.id or cid,
                    (call.function and call.function.name) or name,
                    args + ((call.function and call.function.arguments) or ""),
                )
    return content, reasoning, calls, finish, usage


def sdk_openai_helper(mock, reply):
    """chat.completions.stream(...).get_final_completion()."""
    mock.push(reply)
    with openai_client(mock).chat.completions.stream(model="gpt-4o", messages=PROMPT) as stream:
        for _ in stream:
            pass
        return stream.get_final_completion()


def no_invalid_requests(mock):
    bad = [r for r in mock.requests() if r["validation"]]
    expect(not bad, "the mock found an SDK request invalid: " + "; ".join(r["validation"] for r in bad))


def expect_status_error(call, status=None):
    try:
        call()
    except anthropic.APIStatusError as e:
        got = e
    except openai.APIStatusError as e:
        got = e
    else:
        raise CaseFailure("the SDK did not raise APIStatusError")
    if status is not None:
        expect(got.status_code == status, f"APIStatusError with status {got.status_code}, want {status}")
    return got


# ----------------------------------------------------------------------------------------------
# Cases.


def status_from_name(name):
    stem = Path(name).stem
    at = stem.find("error-")
    digits = stem[at + 6 : at + 9] if at >= 0 else ""
    return int(digits) if digits.isdigit() else None


def anthropic_stream_case(mock, reply, expected=None):
    status, body = mock.raw("anthropic", dict(reply, chunking="whole"))
    expect(status == 200, f"raw fetch got HTTP {status}: {body[:300]!r}")
    blocks, errored = check_anthropic_raw(body)
    sdk_reply = dict(reply, chunking=reply.get("chunking", {"fixed": 37}))
    if errored:
        err = expect_status_error(lambda: sdk_anthropic(mock, sdk_reply))
        if expected and "error_type" in expected:
            expect(expected["error_type"] in str(err), f"{err} does not mention {expected['error_type']}")
        return
    expect(not (expected and "error_type" in expected), "the stream has no error event")
    message = sdk_anthropic(mock, sdk_reply)
    for i, block in enumerate(message.content):
        raw = blocks.get(i, "")
        if block.type == "text":
            expect(block.text == raw, f"block {i}: the SDK's text {block.text!r} != raw deltas {raw!r}")
        elif block.type == "thinking":
            expect(block.thinking == raw, f"block {i}: the SDK's thinking differs from the raw deltas")
        elif block.type == "tool_use":
            expect(block.input == (json.loads(raw) if raw else {}), f"block {i}: tool input {block.input!r}")
    if expected:
        got = [
            {"text": b.text} if b.type == "text"
            else {"thinking": b.thinking, "signature": b.signature} if b.type == "thinking"
            else {"tool_use": [b.id, b.name, b.input]} if b.type == "tool_use"
            else {b.type: None}
            for b in message.content
        ]
        expect(got == expected["content"], f"content {got} != scripted {expected['content']}")
        expect(message.stop_reason == expected["stop_reason"], f"stop_reason {message.stop_reason}")
        if "usage" in expected:
            u = message.usage
            got_usage = [u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens]
            expect(got_usage == expected["usage"], f"usage {got_usage} != {expected['usage']}")


def openai_stream_case(mock, reply, expected=None):
    status, body = mock.raw("openai", dict(reply, chunking="whole"))
    expect(status == 200, f"raw fetch got HTTP {status}: {body[:300]!r}")
    raw_content, raw_reasoning, raw_calls, raw_finish, done = check_openai_raw(body)
    sdk_reply = dict(reply, chunking=reply.get("chunking", {"fixed": 37}))
    content, reasoning, calls, finish, usage = sdk_openai_create(mock, sdk_reply)
    expect(content == raw_content, "create(stream=True) content differs from the raw chunks")
    expect(reasoning == raw_reasoning, "create(stream=True) reasoning differs from the raw chunks")
    expect(calls == raw_calls, f"create(stream=True) tool calls {calls} != raw {raw_calls}")
    expect(finish == raw_finish, f"create(stream=True) finish_reason {finish} != raw {raw_finish}")
    try:
        completion = sdk_openai_helper(mock, sdk_reply)
    except openai.LengthFinishReasonError:
        # The helper refuses a completion cut by max_tokens by design.
        expect(raw_finish == "length", "LengthFinishReasonError without finish_reason length")
    else:
        message = completion.choices[0].message
        expect((message.content or "") == raw_content, "get_final_completion() content differs from the raw chunks")
        helper_calls = [[c.id, c.function.name, c.function.arguments] for c in message.tool_calls or []]
        expect(
            helper_calls == [list(raw_calls[i]) for i in sorted(raw_calls)],
            f"get_final_completion() tool calls {helper_calls}",
        )
    if expected:
        expect(done, "no [DONE]")
        expect(content == expected.get("content", ""), f"content {content!r} != scripted")
        expect(reasoning == expected.get("reasoning", ""), f"reasoning {reasoning!r} != scripted")
        want_calls = {i: tuple(c) for i, c in enumerate(expected.get("calls", []))}
        expect(calls == want_calls, f"tool calls {calls} != scripted {want_calls}")
        expect(finish == expected["finish"], f"finish_reason {finish}")
        expect(usage is not None, "no usage chunk")
        if "usage" in expected:
            got = [usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details.cached_tokens]
            expect(got == expected["usage"], f"usage {got} != {expected['usage']}")


RESPONSE_EVENT = pydantic.TypeAdapter(ResponseStreamEvent)


def fold_responses(events):
    """(text, summary, {call_id: (name, args)}, terminal event type, usage, encrypted) of typed events."""
    text, summary, calls, names, terminal, usage, encrypted = "", "", {}, {}, None, None, []
    for ev in events:
        expect(terminal is None, f"{ev.type} after {terminal}")
        if ev.type == "response.output_text.delta":
            text += ev.delta
        elif ev.type == "response.reasoning_summary_text.delta":
            summary += ev.delta
        elif ev.type == "response.output_item.added" and ev.item.type == "function_call":
            names[ev.output_index] = ev.item.call_id
            calls[ev.item.call_id] = (ev.item.name, "")
        elif ev.type == "response.function_call_arguments.delta":
            name, args = calls[names[ev.output_index]]
            calls[names[ev.output_index]] = (name, args + ev.delta)
        elif ev.type == "response.output_item.done" and ev.item.type == "reasoning":
            encrypted.append(ev.item.encrypted_content)
        elif ev.type in ("response.completed", "response.incomplete", "response.failed", "error"):
            terminal = ev.type
            if ev.type != "error":
                usage = ev.response.usage
    return text, summary, calls, terminal, usage, encrypted


def responses_stream_case(mock, reply, expected=None):
    """The raw events validate as the SDK's ResponseStreamEvent union; responses.create(stream=True)
    and the responses.stream() helper read the same content."""
    status, body = mock.raw("responses", dict(reply, chunking="whole"))
    expect(status == 200, f"raw fetch got HTTP {status}: {body[:300]!r}")
    raw = []
    for name, data in sse_events(body):
        ev = RESPONSE_EVENT.validate_python(json.loads(data))
        expect(name == ev.type, f"event: line {name!r} differs from type {ev.type!r}")
        raw.append(ev)
    want = fold_responses(raw)
    expect(want[3] is not None, "no terminal event")
    sdk_reply = dict(reply, chunking=reply.get("chunking", {"fixed": 37}))
    mock.push(sdk_reply)
    stream = openai_client(mock).responses.create(
        model="gpt-5", input=PROMPT, stream=True, store=False, include=["reasoning.encrypted_content"]
    )
    got = fold_responses(list(stream))
    expect(got[:4] == want[:4], f"responses.create(stream=True) read {got[:4]}, the raw events {want[:4]}")
    if want[3] == "response.completed":
        mock.push(sdk_reply)
        with openai_client(mock).responses.stream(model="gpt-5", input=PROMPT, store=False) as helper:
            for _ in helper:
                pass
            final = helper.get_final_response()
        expect(final.output_text == want[0], f"get_final_response().output_text {final.output_text!r}")
        helper_calls = {i.call_id: (i.name, i.arguments) for i in final.output if i.type == "function_call"}
        expect(helper_calls == want[2], f"get_final_response() calls {helper_calls}")
    if expected:
        expect(got[0] == expected.get("text", ""), f"text {got[0]!r}")
        expect(got[1] == expected.get("summary", ""), f"summary {got[1]!r}")
        expect(got[2] == expected.get("calls", {}), f"calls {got[2]}")
        expect(got[5] == expected.get("encrypted", []), f"encrypted {got[5]}")
        if "usage" in expected:
            u = got[4]
            have = [u.input_tokens, u.output_tokens, u.input_tokens_details.cached_tokens]
            expect(have == expected["usage"], f"usage {have} != {expected['usage']}")


def error_json_case(mock, api, fixture):
    status = status_from_name(fixture)
    expect(status is not None, f"cannot tell the status of {fixture} from its name")
    if api == "anthropic":
        err = expect_status_error(lambda: sdk_anthropic(mock, {"fixture": fixture}), status)
    else:
        err = expect_status_error(lambda: sdk_openai_create(mock, {"fixture": fixture}), status)
    expect(err.body is not None, "the SDK did not parse the error body")


USAGE = {"input_tokens": 321, "output_tokens": 45, "cache_read_tokens": 1000, "cache_write_tokens": 7}
WEATHER = {"location": "Paris, France", "unit": "celsius", "days": [1, 2]}

# Builder name -> list of (label, args, api, expected). Every builder the mock reports must be here.
BUILDER_CASES = {
    "anthropic_text": [
        ("", {"text": "Hello, wörld! A few words 🎉 for the SDK."}, "anthropic",
         {"content": [{"text": "Hello, wörld! A few words 🎉 for the SDK."}], "stop_reason": "end_turn"}),
        ("usage", {"text": "Counted.", "usage": USAGE}, "anthropic",
         {"content": [{"text": "Counted."}], "stop_reason": "end_turn", "usage": [321, 45, 1000, 7]}),
    ],
    "anthropic_tool_uses": [
        ("", {"text": "Let me check.", "calls": [
            {"id": "toolu_01A", "name": "get_weather", "input": WEATHER},
            {"id": "toolu_01B", "name": "get_time", "input": "{}"}]}, "anthropic",
         {"content": [{"text": "Let me check."}, {"tool_use": ["toolu_01A", "get_weather", WEATHER]},
                      {"tool_use": ["toolu_01B", "get_time", {}]}], "stop_reason": "tool_use"}),
    ],
    "anthropic_thinking": [
        ("", {"thinking": "The user greets me; answer briefly.", "signature": "EqQBCkYIBxgCKkBsig+/==",
              "text": "Hi!"}, "anthropic",
         {"content": [{"thinking": "The user greets me; answer briefly.", "signature": "EqQBCkYIBxgCKkBsig+/=="},
                      {"text": "Hi!"}], "stop_reason": "end_turn"}),
    ],
    "anthropic_overloaded_mid_stream": [("", {}, "anthropic", {"error_type": "overloaded_error"})],
    "anthropic_text_deltas": [
        ("", {"count": 2000}, "anthropic", None),
    ],
    "openai_text": [
        ("", {"text": "Sure — a short answer, ünïcödé included."}, "openai",
         {"content": "Sure — a short answer, ünïcödé included.", "finish": "stop"}),
        ("usage", {"text": "Counted.", "usage": USAGE}, "openai",
         {"content": "Counted.", "finish": "stop", "usage": [1321, 45, 1000]}),
    ],
    "openai_tool_calls": [
        ("", {"text": "Checking.", "calls": [
            {"id": "call_A", "name": "get_weather", "arguments": json.dumps(WEATHER)},
            {"id": "call_B", "name": "get_time", "arguments": "{}"}]}, "openai",
         {"content": "Checking.", "calls": [["call_A", "get_weather", json.dumps(WEATHER)],
                                            ["call_B", "get_time", "{}"]], "finish": "tool_calls"}),
    ],
    "openai_reasoning": [
        ("", {"reasoning": "Weigh the options first.", "text": "Option B."}, "openai",
         {"content": "Option B.", "reasoning": "Weigh the options first.", "finish": "stop"}),
        ("openrouter field", {"reasoning": "Think.", "text": "Done.", "field": "reasoning"}, "openai",
         {"content": "Done.", "reasoning": "Think.", "finish": "stop"}),
    ],
    "openai_text_deltas": [("", {"count": 2000}, "openai", None)],
    "responses_text": [
        ("", {"text": "A Responses answer, ünïcödé included."}, "responses",
         {"text": "A Responses answer, ünïcödé included."}),
        ("usage", {"text": "Counted.", "usage": USAGE}, "responses", {"text": "Counted.", "usage": [1328, 45, 1000]}),
    ],
    "responses_tool_calls": [
        ("", {"summary": "**Planning**", "encrypted_content": "gAAAAB-check", "text": "Checking.", "calls": [
            {"id": "call_A", "name": "get_weather", "arguments": json.dumps(WEATHER)},
            {"id": "call_B", "name": "get_time", "arguments": "{}"}]}, "responses",
         {"text": "Checking.", "summary": "**Planning**", "encrypted": ["gAAAAB-check"],
          "calls": {"call_A": ("get_weather", json.dumps(WEATHER)), "call_B": ("get_time", "{}")}}),
    ],
    "responses_reasoning": [
        ("", {"summary": "Weigh the options first.", "encrypted_content": "gAAAAB-r", "text": "Option B."},
         "responses", {"text": "Option B.", "summary": "Weigh the options first.", "encrypted": ["gAAAAB-r"]}),
    ],
}


def cases(mock, fixtures):
    """(label, function) for every case."""
    out = []
    for directory, api in (("anthropic", "anthropic"), ("openai", "openai"), ("openai-compat", "openai"),
                           ("responses", "responses")):
        for path in sorted((fixtures / directory).iterdir()):
            name = f"{directory}/{path.name}"
            if name in SKIPPED_FIXTURES or path.name.endswith(".meta.json"):
                continue
            if path.suffix == ".sse":
                if api == "anthropic":
                    out.append((name, lambda n=name: anthropic_stream_case(mock, {"fixture": n})))
                elif api == "responses":
                    out.append((name, lambda n=name: responses_stream_case(mock, {"fixture": n})))
                else:
                    out.append((name, lambda n=name: openai_stream_case(mock, {"fixture": n})))
            elif path.suffix == ".json" and path.name.startswith("error-"):
                out.append((name, lambda n=name, a=api: error_json_case(mock, a, n)))
    known = mock.builders()
    for name in known:
        if name not in BUILDER_CASES:
            out.append((f"builder {name}", lambda n=name: expect(False, f"check.py has no case for builder {n}")))
            continue
        for label, args, api, expected in BUILDER_CASES[name]:
            title = f"builder {name} {label}".strip()
            run = {"anthropic": anthropic_stream_case, "responses": responses_stream_case}.get(api, openai_stream_case)
            if name.endswith("_deltas"):
                reply = {"builder": {"name": name, "args": args}, "chunking": {"fixed": 37}}
                out.append((title, lambda r=reply, f=run, c=args["count"]: deltas_case(mock, f, r, c)))
            else:
                reply = {"builder": {"name": name, "args": args}, "chunking": "every_byte"}
                out.append((title, lambda r=reply, f=run, e=expected: f(mock, r, e)))
    # The mock's CRLF framing must be as acceptable to the SDKs as LF.
    out.append(("crlf anthropic/text-then-tool-use.sse",
                lambda: anthropic_stream_case(mock, {"fixture": "anthropic/text-then-tool-use.sse", "crlf": True})))
    out.append(("crlf openai/tool-call.sse",
                lambda: openai_stream_case(mock, {"fixture": "openai/tool-call.sse", "crlf": True})))
    for name in BUILDER_CASES:
        if name not in known:
            out.append((f"builder {name}", lambda n=name: expect(False, f"the mock has no builder {n} any more")))
    return out


def deltas_case(mock, run, reply, count):
    """A benchmark stream: consumed by the SDK, with exactly `count` content deltas on the wire."""
    run(mock, reply)
    _, body = mock.raw("anthropic" if run is anthropic_stream_case else "openai", reply)
    if run is anthropic_stream_case:
        got = sum(1 for n, _ in sse_events(body) if n == "content_block_delta")
    else:
        got = sum(1 for _, d in sse_events(body) if '"delta":{"content":' in d)
    expect(got == count, f"{got} deltas on the wire, want {count}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default=os.environ.get("PANTO_MOCK_URL"), help="the running mock")
    parser.add_argument("--fixtures", required=True, type=Path, help="crates/panto-testkit/fixtures/wire")
    args = parser.parse_args()
    if not args.base_url:
        parser.error("--base-url (or PANTO_MOCK_URL) is required")
    mock = Mock(args.base_url)
    passed = failed = 0
    for label, run in cases(mock, args.fixtures):
        mock.reset()
        try:
            run()
            no_invalid_requests(mock)
        except CaseFailure as e:
            failed += 1
            print(f"FAIL {label}: {e}")
        except Exception as e:  # an SDK or validation error is a failure of this case, not of the run
            failed += 1
            print(f"FAIL {label}: {type(e).__name__}: {e}")
        else:
            passed += 1
            print(f"PASS {label}")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
