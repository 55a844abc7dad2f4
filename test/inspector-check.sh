#!/usr/bin/env bash
# The MCP Inspector's CLI (pinned) lists this server's tools, in strict schema mode, in both
# protocol eras: the 2025 way (initialize) and the 2026-07-28 way (server/discover), each
# against a fresh home. CI runs this after `npm test`; it needs dist/ built and the npm
# registry reachable.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=(servers_provision companies_create domains_register storage_purchase servers_renew agent_services_purchase quote_action get_execution list_executions wait_for_execution get_spending search_agent_services get_company)
for era in legacy modern; do
  home=$(mktemp -d)
  out=$(npx --yes @modelcontextprotocol/inspector@2.12.0 --cli --strict --protocol-era "$era" -e "PAID_ACTIONS_HOME=$home" node dist/cli.js --method tools/list 2>"$home/stderr") || {
    echo "inspector ($era): failed" >&2
    cat "$home/stderr" >&2
    rm -rf "$home"
    exit 1
  }
  rm -rf "$home"
  for tool in "${tools[@]}"; do
    grep -q "\"name\": \"$tool\"" <<<"$out" || { echo "inspector ($era): tool $tool missing from tools/list" >&2; exit 1; }
  done
  echo "inspector ($era): tools/list lists all $(grep -c '"name": ' <<<"$out") tools"
done
