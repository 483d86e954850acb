#!/usr/bin/env bash
# End-to-end check of a running `strata serve` with curl and jq, the way a
# shell or Node.js client would use it.
#
#   STRATA_URL=http://127.0.0.1:8080 STRATA_KEY=… STRATA_OTHER_KEY=… server/testdata/curl_e2e.sh
#
# STRATA_KEY and STRATA_OTHER_KEY are API keys of two different users. The
# server should fold small windows (the Go test that runs this script
# configures recent-message-count 6, chunked policy, extractive summarizer).
# Exits non-zero with a message on the first failed check.
set -euo pipefail

: "${STRATA_URL:?set STRATA_URL}" "${STRATA_KEY:?set STRATA_KEY}" "${STRATA_OTHER_KEY:?set STRATA_OTHER_KEY}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fail() { echo "curl_e2e: FAIL: $*" >&2; exit 1; }
step() { echo "curl_e2e: $*"; }

# req METHOD PATH [BODY] [KEY]: sets STATUS and BODY (the response).
req() {
	local method="$1" path="$2" body="${3:-}" key="${4-$STRATA_KEY}"
	local -a args=(-sS -X "$method" -o "$tmp/out" -w '%{http_code}' --max-time 30)
	[ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
	if [ -n "$body" ]; then
		printf '%s' "$body" >"$tmp/in"
		args+=(-H 'Content-Type: application/json' --data-binary "@$tmp/in")
	fi
	STATUS="$(curl "${args[@]}" "$STRATA_URL$path")"
	BODY="$(cat "$tmp/out")"
}

# expect STATUS: the last request's status.
expect() { [ "$STATUS" = "$1" ] || fail "$LAST: got $STATUS, want $1: $BODY"; }
# check JQ_EXPR: the last response satisfies a jq test.
check() { jq -e "$1" >/dev/null <<<"$BODY" || fail "$LAST: $1 is false for $BODY"; }

LAST="GET /healthz"; req GET /healthz "" ""; expect 200; check '.status == "ok"'
LAST="GET /readyz"; req GET /readyz "" ""; expect 200; check '.status == "ready"'
LAST="GET /openapi.json"; req GET /openapi.json "" ""; expect 200; check '.paths["/v1/sessions/{id}/context"].get'

step "authentication"
LAST="no key"; req GET /v1/sessions "" ""; expect 401; check '.code == "unauthorized" and (.request_id | length > 0)'
LAST="wrong key"; req GET /v1/sessions "" "wrong-key-0123456789abcdef"; expect 401

step "sessions are created by POST /v1/sessions"
LAST="append to an unknown session"; req POST /v1/sessions/my-own-id/messages '{"turn":{"user":"hello?"}}'; expect 404; check '.code == "not_found"'

step "create a session with a title"
LAST="POST /v1/sessions"
req POST /v1/sessions '{"title":"Lost luggage","messages":[{"role":"user","content":"Hi, my name is Ada Byron. My booking ref is QX7Z2P."},{"role":"assistant","content":"Hello Ada, I found booking ref QX7Z2P.","metadata":{"model_variant":"arco"}}]}'
expect 201; check '.stored == 2 and .total == 2 and .title == "Lost luggage"'
id="$(jq -r .id <<<"$BODY")"

step "append 30 turns to $id"
for i in $(seq 1 30); do
	LAST="turn $i"
	req POST "/v1/sessions/$id/messages" "{\"turn\":{\"user\":\"Update $i: my bag from flight UA 123 is still missing, email ada@example.com.\",\"assistant\":\"Noted update $i for flight UA 123.\",\"model_variant\":\"arco-pro\"}}"
	expect 200; check ".stored == 2 and .total == $((2 + 2 * i))"
done
LAST="tool call"
req POST "/v1/sessions/$id/messages" '{"messages":[{"role":"user","content":"Track it please."},{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"track_bag","arguments":"{\"tag\":\"UA123-9\"}"}}]},{"role":"tool","tool_call_id":"call_1","name":"track_bag","content":"{\"location\":\"Lisbon\"}"},{"role":"assistant","content":"Your bag is in Lisbon."}]}'
expect 200; check '.stored == 4 and .total == 66'

step "context under a small budget"
for try in $(seq 1 50); do
	LAST="GET context"; req GET "/v1/sessions/$id/context"; expect 200
	if jq -e '.mode == "hierarchical"' >/dev/null <<<"$BODY"; then break; fi
	sleep 0.1
done
check '.mode == "hierarchical" and .removed == 0 and .tokens.total == .tokens.before_trim and .stored_messages == 66'
# A budget a little under the full context: the oldest verbatim turns go,
# the facts and summary stay first, the tool group stays whole.
budget=$(($(jq .tokens.total <<<"$BODY") - 30))
LAST="GET context?budget=$budget"; req GET "/v1/sessions/$id/context?budget=$budget"; expect 200
check ".tokens.total <= $budget and .tokens.budget == $budget and .removed > 0 and .over_budget == false"
check '.messages[0].role == "system" and (.messages[0].content | startswith("Conversation Facts:"))'
check '.messages[0].content | contains("ada@example.com")'
check '.messages[1].role == "system" and (.messages[1].content | startswith("Conversation Summary:"))'
check '[.messages[] | select(.role == "system")] | length == 2'
check '.messages[-1].content == "Your bag is in Lisbon." and .messages[-2].role == "tool" and .messages[-3].tool_calls[0].id == "call_1"'

step "history, paginated"
LAST="GET session page 1"; req GET "/v1/sessions/$id?limit=40"; expect 200
check '.title == "Lost luggage" and .message_count == 66 and (.messages | length) == 40 and .next_after_seq != null'
check '.messages[1].metadata.model_variant == "arco" and (.summary.facts | length) > 0'
next="$(jq -r .next_after_seq <<<"$BODY")"
LAST="GET session page 2"; req GET "/v1/sessions/$id?limit=40&after_seq=$next"; expect 200
check '(.messages | length) == 26 and .next_after_seq == null'
check '[.messages[] | select(.tool_calls)] | .[0].tool_calls[0].function.name == "track_bag"'

step "bad requests"
LAST="unknown field"; req POST "/v1/sessions/$id/messages" '{"turn":{"user":"x"},"colour":"red"}'; expect 400; check '.error | contains("unknown field \"colour\"")'
LAST="malformed JSON"; req POST "/v1/sessions/$id/messages" '{"turn":'; expect 400; check '.code == "bad_request"'
LAST="oversized body"
head -c 1100000 /dev/zero | tr '\0' 'a' >"$tmp/big"
STATUS="$(curl -sS -o "$tmp/out" -w '%{http_code}' --max-time 30 -H "Authorization: Bearer $STRATA_KEY" -H 'Content-Type: application/json' --data-binary "@$tmp/big" "$STRATA_URL/v1/sessions/$id/messages")"
BODY="$(cat "$tmp/out")"; expect 413; check '.code == "body_too_large"'

step "listing and search"
LAST="list"; req GET "/v1/sessions?limit=10"; expect 200; check ".total >= 1 and ([.sessions[].id] | index(\"$id\")) != null"
LAST="search"; req GET "/v1/sessions?search=missing%20bag%20flight"; expect 200; check ".matches[0].id == \"$id\""

step "another user"
LAST="other GET"; req GET "/v1/sessions/$id" "" "$STRATA_OTHER_KEY"; expect 404; check '.error == "session not found"'
LAST="other append"; req POST "/v1/sessions/$id/messages" '{"turn":{"user":"mine"}}' "$STRATA_OTHER_KEY"; expect 404; check '.error == "session not found"'
LAST="other DELETE"; req DELETE "/v1/sessions/$id" "" "$STRATA_OTHER_KEY"; expect 404
LAST="other search"; req GET "/v1/sessions?search=bag" "" "$STRATA_OTHER_KEY"; expect 200; check "[.matches[].id] | index(\"$id\") == null"

step "delete"
LAST="DELETE"; req DELETE "/v1/sessions/$id"; expect 204
LAST="GET deleted"; req GET "/v1/sessions/$id"; expect 404; check '.error == "session not found"'
LAST="DELETE again"; req DELETE "/v1/sessions/$id"; expect 404
LAST="append after DELETE"; req POST "/v1/sessions/$id/messages" '{"turn":{"user":"back?"}}'; expect 404
echo "curl_e2e: OK"
