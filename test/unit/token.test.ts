/** domain/token.ts: each (owner, mint) derived once, the same address the token program's helper derives, a bounded memory. */
import { TOKEN_PROGRAM_ADDRESS, findAssociatedTokenPda } from "@solana-program/token";
import { address } from "@solana/kit";
import { describe, expect, it } from "vitest";
import { associatedTokenAddress, MAX_KEPT } from "../../src/domain/token.js";

const MINT = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
const OWNERS = ["9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", "2wmVCSfPxGPjrnMMn7rchp4uaeoTr2Q84yUGYnrnR9tR"];

describe("associatedTokenAddress", () => {
  it.each(OWNERS)(
    "for %s: the token program's own derivation, and the same promise on the second ask",
    async (owner) => {
      const [expected] = await findAssociatedTokenPda({
        owner: address(owner),
        mint: address(MINT),
        tokenProgram: TOKEN_PROGRAM_ADDRESS,
      });
      const first = associatedTokenAddress(owner, MINT);
      expect(await first).toBe(expected);
      expect(associatedTokenAddress(owner, MINT)).toBe(first);
    },
  );

  it("a bad address is refused each time it is asked, not kept", async () => {
    await expect(associatedTokenAddress("not-an-address", MINT)).rejects.toThrow();
    await expect(associatedTokenAddress("not-an-address", MINT)).rejects.toThrow();
  });

  it(`keeps at most ${MAX_KEPT} pairs: the oldest is derived again`, async () => {
    const first = associatedTokenAddress(OWNERS[0]!, MINT);
    // Distinct "mints" that are valid addresses: the owners themselves, and each owner of a derived account.
    let mints = [...OWNERS];
    let seen = 0;
    while (seen <= MAX_KEPT) {
      const next = await Promise.all(mints.map((m) => associatedTokenAddress(OWNERS[1]!, m)));
      seen += next.length;
      mints = next;
    }
    expect(associatedTokenAddress(OWNERS[0]!, MINT)).not.toBe(first);
    expect(await associatedTokenAddress(OWNERS[0]!, MINT)).toBe(await first);
  });
});
