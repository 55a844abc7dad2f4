#!/usr/bin/env bash
# The MCP Inspector's CLI (pinned) lists this server's tools, in strict schema mode.
# CI runs this after `npm test`; it needs dist/ built and the npm registry reachable.
set -euo pipefail
cd "$(dirname "$0")/.."
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
out=$(npx --yes @modelcontextprotocol/inspector@2.12.0 --cli --strict -e "PAID_ACTIONS_HOME=$home" node dist/cli.js --method tools/list 2>"$home/stderr") || {
  cat "$home/stderr" >&2
  exit 1
}
for tool in servers_provision companies_create domains_register storage_purchase servers_renew agent_services_purchase quote_action get_execution list_executions wait_for_execution get_spending search_agent_services get_company; do
  grep -q "\"name\": \"$tool\"" <<<"$out" || { echo "inspector: tool $tool missing from tools/list" >&2; exit 1; }
done
echo "inspector: tools/list lists all $(grep -c '"name": ' <<<"$out") tools"
