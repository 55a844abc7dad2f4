/**
 * The command line's help texts: one per command, and the main one. Kept apart from the
 * parsing in src/cli.ts, which prints them.
 */
const ENV_HELP = `Configuration (environment, or a JSON file named by PAID_ACTIONS_CONFIG; the environment wins):
  PAID_ACTIONS_BASE_URL      the v1 service (absent: the embedded sandbox)
  PAID_ACTIONS_API_KEY       its bearer key          PAID_ACTIONS_WALLET   the agent key (Solana CLI keypair file)
  PAID_ACTIONS_OWNER         delegate mode: the owner whose USDC the agent key spends, within an on-chain allowance
  SOLANA_RPC_URL             Solana JSON-RPC         PAID_ACTIONS_NETWORK  solana | solana-devnet | CAIP-2
  PAID_ACTIONS_NETWORKS      networks paid on, in order: solana, solana-devnet, base, base-sepolia (comma list)
  PAID_ACTIONS_EVM_WALLET    the agent's EVM key file (0x + 64 hex)   PAID_ACTIONS_EVM_RPC_URL  its chain's JSON-RPC
  PAID_ACTIONS_HOME          journal and transcripts (default ~/.paid-actions-mcp)
  PAID_ACTIONS_MAX_PER_CALL (5)  PAID_ACTIONS_MAX_PER_DAY (25)  PAID_ACTIONS_MAX_TOTAL
  PAID_ACTIONS_APPROVAL_ABOVE (1)  PAID_ACTIONS_ALLOW_ACTIONS (*, comma list with * wildcards)
  PAID_ACTIONS_ALLOW_ORIGINS     origins paid_fetch may pay (none; * = any public https origin)
  PAID_ACTIONS_FACILITATOR_URL   the facilitator search_paid_resources reads`;

/** The `--csv` export, as executions and purchases describe it. */
const CSV_HELP = `
--csv writes CSV for the books on stdout (RFC 4180, a header row): one row per purchase that
holds money, oldest first — date, what, amount (USDC, a decimal), network, transaction,
status, approved by. A cell that would start with = + - @ is prefixed with ' so that a
spreadsheet does not run it. --since and --until (ISO dates or datetimes, UTC unless a zone
is given) bound it by creation time; a date alone for --until includes that day.
`;

/** The main help, which names the version. */
function mainHelp(VERSION: string): string {
  return `paid-actions-mcp ${VERSION} — an MCP server that lets an agent buy real-world actions,
paying USDC with x402 on Solana and Base, within limits a human set.

Usage: paid-actions-mcp [command] [options]

Commands:
  serve        The MCP server over stdio (the default when no command is given)
  demo         A scripted agent session against the sandbox (what \`npm start\` runs)
  executions   List what was bought, from the journal
  purchases    List the x402 resources paid_fetch bought, from the journal
  transcript   List recent tool calls, or show one call's redacted transcript
  approve      A person approves or declines a payment an agent asked for (or lists those waiting)
  passkey      Register, list or remove the passkey approvals need (a person, at a terminal)
  set-pin      Set, change or remove the approval PIN
  freeze       Stop every server on this journal from signing a new payment (works anywhere)
  unfreeze     A person lets the servers pay again (at a terminal; with the PIN when set)
  doctor       Check configuration, service, wallet, balance and journal
  audit        Reconcile the journal with the wallet's USDC history on chain, per network
  allowance    What the chain lets each key spend; in delegate mode the owner grants or revokes it
  receipt      One purchase's receipt, signed by the key that paid; or verify one anywhere
  console      A local web console: approvals, executions, spending, transcripts, audit
  sandbox      Run the reference service (v1 API + Solana JSON-RPC on an embedded ledger)

Run 'paid-actions-mcp <command> --help' for a command's options.

${ENV_HELP}
`;
}

/** Each command's help text. */
const COMMAND_HELP: Record<string, string> = {
  serve: `Usage: paid-actions-mcp [serve]

The MCP server over stdio, as an MCP host launches it. stdout carries JSON-RPC only;
logs go to stderr. One tool per action of the service, plus quote_action, get_execution,
list_executions, wait_for_execution, get_spending, search_agent_services, get_company,
paid_fetch (any x402 resource on an allowed origin) and search_paid_resources.
Without PAID_ACTIONS_BASE_URL it runs against the embedded sandbox (started in this
process, or reused if one already runs for the same home); PAID_ACTIONS_SANDBOX_DELAY_MS
sets that sandbox's provider delay.

${ENV_HELP}
`,
  demo: `Usage: paid-actions-mcp demo [--home DIR]

A scripted agent session: launches 'paid-actions-mcp serve' over stdio with the MCP SDK's
Client, lists the tools, prices an action, pays for one within budget, is refused one over
budget, follows the execution to completed through a subscription and resource reads, and
shows spending and where the transcript is. Uses a fresh sandbox in a temp dir unless --home.
`,
  executions: `Usage: paid-actions-mcp executions [--status S] [--action A] [--limit N] [--attention] [--json]
       paid-actions-mcp executions --csv [--since DATE] [--until DATE]

Lists executions from the journal (newest first). --attention lists intents a human should
look at (an outcome that could not be settled automatically). Reads only; pays nothing.
${CSV_HELP}`,
  purchases: `Usage: paid-actions-mcp purchases [--origin O] [--limit N] [--json]
       paid-actions-mcp purchases --csv [--since DATE] [--until DATE]

Lists the x402 resources paid_fetch bought (newest first): origin, method, URL with query
values redacted, price, HTTP status, state. --origin keeps one origin's. Reads only.
${CSV_HELP}`,
  transcript: `Usage: paid-actions-mcp transcript [callId] [--limit N] [--json]

Without a callId, lists the most recent tool calls. With one, prints its redacted
transcript: every request and response, decision and timing. API keys, wallet secrets and
payment proofs never appear.
`,
  approve: `Usage: paid-actions-mcp approve [approvalId] [--json]

Without an id, lists the payments waiting for a person: each with its action, full input,
amount, payee, quote expiry, and the day's and total spend once it is paid (--json:
{items: [...]}). Reads only; anyone may list.

With an id, a person decides, at an interactive terminal only (stdin and stdout a TTY;
otherwise it refuses with exit code 2 and nothing changes): it shows the payment, then the
person types the amount exactly as shown to approve it, or "decline" to decline it; then
the approval PIN, when one is set (see set-pin). An approval is for that quote and amount,
once, until the quote expires; the agent then calls the tool again with the same input and
the approvalId. The console (paid-actions-mcp console) offers the same decision.

With a passkey registered (passkey add), an approval counts only with the passkey: approve
shows the payment, then opens the console's page for it (the link is printed too), where the
person approves with the passkey, and waits for the decision. Declining needs no passkey.

Exit code: 0 decided; 1 nothing decided (another answer, Ctrl-C, a wrong PIN, or an
approval that expired, was used, declined or does not exist); 2 no terminal, usage error.
`,
  "set-pin": `Usage: paid-actions-mcp set-pin [--clear]

Sets (or changes) the approval PIN: from then on approving or declining a payment in the
terminal or the console also needs the PIN. Asks for the current PIN first when one is set,
then the new one twice, without echo; at least 4 characters. --clear removes it (the
current PIN is needed). Interactive terminal only. The PIN is kept only as a salted scrypt
hash in $PAID_ACTIONS_HOME/approval-pin (mode 0600).
`,
  freeze: `Usage: paid-actions-mcp freeze [--reason TEXT]

Freezes payments: no server sharing this journal (this home's SQLite file, or the
PostgreSQL journal of a fleet) signs a new payment, and paid tool calls are refused with
"frozen" before anything is recorded or quoted. A purchase whose payment already left is
still followed. Works anywhere, without a terminal: stopping is always safe. Freezing again
keeps the first freeze (its reason and time). Quotes still work. The on-chain twin, which
stops even a server that ignores the journal: paid-actions-mcp allowance revoke.

Options:
  --reason TEXT   Why, shown to the agents refused, in doctor and in the console (one line,
                  at most 200 characters)
  -h, --help      This help
`,
  unfreeze: `Usage: paid-actions-mcp unfreeze

Lifts the freeze: the servers sharing this journal pay again, within the limits. At an
interactive terminal only (stdin and stdout a TTY; otherwise it refuses with exit code 2
and nothing changes), and with the approval PIN when one is set (see set-pin).

Exit code: 0 unfrozen (or nothing was frozen); 1 payments stay frozen (no PIN, a wrong
PIN); 2 no terminal, usage error.
`,
  doctor: `Usage: paid-actions-mcp doctor

Checks the configuration, that the service answers, each network's key (and its file
permissions) and what the chain lets it spend — on Solana its USDC balance or, in delegate
mode, the allowance left; on EVM the key's own balance — the approvals waiting,
whether payments are frozen (a warning), and the journal's health. Exit code 0 when ready
to pay (once unfrozen, when frozen).
`,
  audit: `Usage: paid-actions-mcp audit [--since DATE] [--json]

On each network paid on, reads the paying account's USDC history through that network's RPC
(Solana: the wallet's token account; EVM: the key's Transfer logs) and reconciles it with
the journal's payments there: every outflow must be a journaled payment (by its memo, the
quote id; on EVM its authorization's nonce) of the journaled amount; every payment the journal counts as landed or
settled must be on chain; every refund credited must have come into the wallet. Deposits
(money in that is no refund) are listed, not flagged. Reads only; pays nothing.

Options:
  --since DATE   Audit from this time: 2026-11-01 or 2026-11-01T12:00:00Z (UTC unless an
                 offset is given). Default: the journal's first payment, minus 10 minutes
  --json         One JSON document: {since, wallet, walletTokenAccount, outflows, payments,
                 refunds, deposits, discrepancies, inFlight, ok, scan, rails} (rails: each
                 network's wallet, account, scan and agreement)
  -h, --help     This help

Exit code: 0 journal and chain agree; 3 they do not (each discrepancy is printed);
1 cannot tell (configuration invalid, RPC not answering: said on stderr); 2 usage error.
`,
  passkey: `Usage: paid-actions-mcp passkey add [--label NAME] [--owner-keypair PATH | --unsigned] [--port N] [--no-open]
       paid-actions-mcp passkey list [--json]
       paid-actions-mcp passkey remove CREDENTIAL_ID [--port N] [--no-open]
       paid-actions-mcp passkey submit CREDENTIAL_ID SIGNATURE

Once a passkey is registered, an approval counts only when the person gives it in the console
with that passkey (WebAuthn, user verification required): the passkey signs the digest of the
payment's terms (what, amount, asset, network, payee, quote expiry, approvalId), the engine
verifies it before it signs, and keeps it with the approval for receipts.

  add      At an interactive terminal: opens the console's passkey page (the one-time link is
           printed too; the browser must reach it as localhost) where the person creates the
           passkey; waits until it is registered. --owner-keypair PATH signs the passkey's
           statement with the owner's Solana keypair, so that a receipt shows the passkey is
           the wallet owner's; --unsigned prints that statement for the owner's wallet to
           sign instead (then: passkey submit)
  list     The passkeys registered (and removed), with their owner binding
  remove   At an interactive terminal, in the console, with a registered passkey's assertion
  submit   Keeps the owner wallet's signature (base58 or base64) of a passkey's statement

The owner is PAID_ACTIONS_OWNER in delegate mode, else the agent key's own address.
Exit code: 0 done; 1 not done (said on stderr); 2 no terminal, usage error.
`,
  allowance: `Usage: paid-actions-mcp allowance [--json]
       paid-actions-mcp allowance grant AMOUNT (--owner-keypair PATH | --unsigned)
       paid-actions-mcp allowance revoke (--owner-keypair PATH | --unsigned)
       paid-actions-mcp allowance submit BASE64

Delegate mode (PAID_ACTIONS_OWNER set): the agent key (PAID_ACTIONS_WALLET) pays from the
owner's USDC token account as its SPL Token delegate. The token program refuses any
transfer past the allowance the owner granted, whoever holds the agent key.

  (no subcommand)  The owner, the agent key, the token account, the allowance left and the
                   owner's balance, read through SOLANA_RPC_URL. --json prints
                   {owner, delegate, tokenAccount, allowance, ownerBalance} (decimal strings)
                   With an EVM network paid on: each network's key, account and ceiling —
                   on EVM the key's own balance (EIP-3009 has no delegate); --json prints
                   {rails: [{network, wallet, account, ceiling, left}]}
  grant AMOUNT     Sets the allowance to AMOUNT USDC (it replaces what is left, as
                   ApproveChecked does), signed with the owner's Solana CLI keypair file
                   (--owner-keypair), sent and confirmed
  revoke           Takes the allowance back: every later paid call is refused before signing
  --unsigned       Prints the transaction (base64) for the owner's wallet to sign instead;
                   send the signed one with: allowance submit BASE64
  submit BASE64    Sends a wallet-signed grant or revoke (checked first: one allowance change
                   of this agent key on the owner's account, the owner paying the fee)

Exit code: 0 done; 1 it could not be done (said on stderr); 2 usage error.
`,
  receipt: `Usage: paid-actions-mcp receipt ID [--out FILE]
       paid-actions-mcp receipt verify FILE [--rpc URL] [--json]

receipt ID writes the receipt of one purchase (ID: an execution's executionId, or a
purchase's intentId) as one self-contained JSON document (paid-actions/1), on stdout or in
FILE: what was bought (the action and its input's digest, or the method and URL with query
values redacted), the requirement as received, the approval (who, how, when, and a
passkey's assertion), the payment (network, transaction, payer, payee, amount, memo), what
our Solana RPC shows of it now (slot, finality, the transfer, the wire transaction), the
outcome (status, output digest, refunds seen on chain) and the seller's signed offer and
receipt when it gave them. Signed as a whole by the key that signed the payment. No secret
goes in it. A purchase for which nothing was ever signed moved no money: it has none.

receipt verify FILE checks one without a journal or a configuration: each section against
the digest it was signed with, the receipt's signature (by the payer), the wire
transaction's signatures and transfer, the approval's passkey assertion over the terms,
the seller's signatures; with --rpc URL (any RPC of its network), that its transfer is on
chain as stated. --json prints {holds, checks: [{check, holds, detail}]}.

Exit code: 0 made, or the receipt holds; 3 it does not hold (each failing check is named);
1 no receipt could be made (said on stderr); 2 usage error.
`,
  console: `Usage: paid-actions-mcp console [--port N] [--no-open]

A web console on 127.0.0.1 over this home's journal (the one its MCP servers share; none
needs to run): approve or decline waiting payments (with the approval PIN when one is set),
follow executions and their timelines, spending against the caps, transcripts, the audit.
Prints a login link on stdout and signs the browser in with the same one-time token (through
a sign-in page only you can read, opened by its path: never the link on a command line). The
link works once, for 10 minutes; it signs that browser in. Runs until Ctrl-C or SIGTERM.

Options:
  --port N     Port on 127.0.0.1, 1-65535 (default: a free one)
  --no-open    Print the link only; do not open a browser
  -h, --help   This help
`,
  sandbox: `Usage: paid-actions-mcp sandbox [--port N] [--home DIR] [--api-key KEY]... [--api-key-file PATH]...

Runs the reference payment-gated action service on 127.0.0.1: the v1 API at
http://127.0.0.1:N/v1 and a Solana JSON-RPC endpoint over its ledger at
http://127.0.0.1:N/solana. Writes DIR/sandbox.json with {baseUrl, apiKey, rpcUrl,
network, asset, walletPath, owner, agentKeyPath, agentAddress}: the demo wallet (1000 USDC)
is the owner, and on first start it grants the agent key an allowance of 25 USDC as its
delegate. A restart on the same DIR continues where it stopped.

Options:
  --port N                 Port on 127.0.0.1 (default 8402; 0 picks a free one)
  --home DIR               Where state lives (default $PAID_ACTIONS_HOME/sandbox or ~/.paid-actions-mcp/sandbox)
  --api-key KEY            Accept this bearer key; repeat for more tenants. Without any key
                           (from here, a file or the environment), one is generated on first
                           start and kept in DIR
  --api-key-file PATH      Accept the keys in PATH: one per line, blank lines and # comments
                           ignored; refused if group or others can access it (chmod 600).
                           Keeps keys out of the process list. Repeatable
  --provider-delay-ms MS   How long a simulated provider takes (default 3000)
  --quote-ttl-seconds S    Quote lifetime (default 300)
  --rate-limit N           Requests per second per API key, and per client address on
                           /solana and without a key, bursts of 4x (default 50)
  --allow-private-webhooks Deliver webhooks to loopback and private addresses too (local
                           receivers); by default such URLs are refused with 400
  -h, --help               This help

Environment:
  PAID_ACTIONS_SANDBOX_API_KEYS  More keys, comma-separated. Keys from --api-key, the files
                                 and this variable all combine.

Sandbox-only request headers: X-Sandbox-Outcome: fail (the provider fails and the payment
is refunded), X-Sandbox-Delay-Ms: N (this execution's provider delay).
Stop with Ctrl-C or SIGTERM.
`,
};

/** Each command's help text, and the main one under `main`. */
export function helpTexts(version: string): Record<string, string> {
  return { main: mainHelp(version), ...COMMAND_HELP };
}
