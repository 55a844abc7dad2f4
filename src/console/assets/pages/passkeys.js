// @ts-check
// /passkeys: the passkeys approvals need, and the ceremony a terminal's `paid-actions-mcp
// passkey add` (create one) or `passkey remove` (remove one, with a registered passkey) offers
// here. Only the console such a command started has a ceremony; any console lists the passkeys.
import { failure, getPasskeys, postCeremony } from "../api.js";
import { fill, h, loading, mono, notice, pageHead, timeEl } from "../dom.js";
import { assert, createPasskey, onLocalhost } from "../webauthn.js";

/** @typedef {import("../wire.js").Passkey} Passkey */
/** @typedef {import("../wire.js").PasskeyCeremony} PasskeyCeremony */

/** @param {Passkey[]} items */
function list(items) {
  if (items.length === 0)
    return h("p", { class: "muted" }, "No passkey is registered: approvals are given without one.");
  return h(
    "ul",
    { class: "passkeys" },
    ...items.map((p) =>
      h(
        "li",
        { class: "passkey", "data-credential": p.credentialId },
        h("strong", {}, p.label ?? "(no label)"),
        " ",
        mono(p.credentialId),
        " · registered ",
        timeEl(p.createdAt),
        p.removedAt ? [" · removed ", timeEl(p.removedAt)] : "",
        " · ",
        p.owner ? ["owner ", mono(p.owner)] : "not bound to the owner",
      ),
    ),
  );
}

/**
 * The ceremony's button and what it says once done.
 * @param {PasskeyCeremony} c
 * @param {HTMLElement} message
 * @param {() => Promise<unknown>} reload
 */
function ceremonyBox(c, message, reload) {
  const label = c.kind === "add" ? "Create a passkey" : "Remove it with your passkey";
  const button = h("button", { type: "button", class: "decide approve", "data-ceremony": c.kind }, label);
  button.addEventListener("click", async () => {
    button.disabled = true;
    fill(message, h("span", { class: "muted" }, "Waiting for your authenticator…"));
    try {
      const body =
        c.kind === "add"
          ? await createPasskey(c)
          : { assertion: await assert(c.challenge, c.rpId, c.allowCredentials) };
      const res = await postCeremony(body);
      fill(message, notice("good", res.message));
      // The terminal's console closes once its ceremony is done: the list may not load again.
      reload().catch(() => undefined);
    } catch (caught) {
      fill(message, notice("error", failure(caught).message));
      button.disabled = false;
    }
  });
  return h(
    "section",
    { class: "card ceremony" },
    h("h2", {}, c.kind === "add" ? "Register a passkey" : "Remove a passkey"),
    h(
      "p",
      {},
      c.kind === "add"
        ? "Your terminal asked to register a passkey. From then on, an approval counts only when you give it here with a passkey: it signs the payment's terms."
        : ["Your terminal asked to remove the passkey ", mono(c.credentialId), ". Confirm with a registered passkey."],
    ),
    button,
  );
}

/**
 * @param {HTMLElement} main
 */
export async function mount(main) {
  if (!(await onLocalhost("/passkeys"))) {
    main.append(loading("Moving to the console's localhost address (passkeys need it)…"));
    return undefined;
  }
  main.append(pageHead("Passkeys", "With a passkey registered, approvals are given with it."));
  const box = h("div", {}, loading("Loading the passkeys…"));
  const message = h("div", { class: "decide-message", "aria-live": "polite" });
  main.append(box, message);
  const load = async () => {
    const res = await getPasskeys();
    fill(box, res.ceremony ? ceremonyBox(res.ceremony, message, load) : "", list(res.items));
  };
  await load();
  return undefined;
}
