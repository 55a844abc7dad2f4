/**
 * Reading the balances a landed transaction's meta reports (lamports of every account it
 * names, the token balances of its token accounts), before and after it runs — the hot
 * path of every settlement, so it avoids what costs there: LiteSVM's `getAccount` turns the
 * address from base58 and the owner to base58 on each call (both slow in JS) and copies
 * the data, a program's whole ELF included.
 *
 * So accounts are read by their 32 bytes through LiteSVM's native handle when it has one
 * (litesvm 1.5's `inner`; the public `getAccount` otherwise, with the same results), token
 * accounts are decoded from their first 72 bytes with addresses named from a cache, and the
 * lamports of a program are read once: the runtime refuses any change to an executable
 * account's lamports. `forget()` after an account is written directly.
 */
import type { Address } from "@solana/kit";
import { getAddressDecoder, getAddressEncoder } from "@solana/kit";
import { TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import type { LiteSVM } from "litesvm";
import type { TokenBalance } from "./history.js";

/** The part of LiteSVM's native handle read here. */
interface NativeAccounts {
  getAccount(
    address: Uint8Array,
  ): { lamports(): bigint; data(): Uint8Array; owner(): Uint8Array; executable(): boolean } | null;
}

/** An account as the balances need it: the owner as bytes or as an address. */
interface AccountRead {
  lamports: bigint;
  executable: boolean;
  data: Uint8Array;
  ownerIsTokenProgram: boolean;
}

const addressDecoder = getAddressDecoder();
const addressEncoder = getAddressEncoder();
const TOKEN_PROGRAM_BYTES = Buffer.from(addressEncoder.encode(TOKEN_PROGRAM_ADDRESS) as Uint8Array);
const CACHE_LIMIT = 4096;

/** Addresses by their 32 bytes and the other way round: a ledger meets the same few accounts. */
const names = new Map<string, string>();
const bytesOf = new Map<string, Uint8Array>();

function remember<K, V>(map: Map<K, V>, key: K, value: V): V {
  if (map.size >= CACHE_LIMIT) map.clear();
  map.set(key, value);
  return value;
}

function addressAt(data: Uint8Array, offset: number): string {
  const key = Buffer.from(data.buffer, data.byteOffset + offset, 32).toString("latin1");
  return names.get(key) ?? remember(names, key, addressDecoder.decode(data.subarray(offset, offset + 32)));
}

function addressBytes(address: Address): Uint8Array {
  return bytesOf.get(address) ?? remember(bytesOf, address, addressEncoder.encode(address) as Uint8Array);
}

/** An SPL token account's mint, owner and amount (its first 72 bytes), if the account is one. */
export function decodeTokenAccount(
  ownerIsTokenProgram: boolean,
  data: Uint8Array,
): { mint: string; owner: string; amount: bigint } | undefined {
  if (!ownerIsTokenProgram || data.length !== 165) return undefined;
  const amount = Buffer.from(data.buffer, data.byteOffset + 64, 8).readBigUInt64LE(0);
  return { mint: addressAt(data, 0), owner: addressAt(data, 32), amount };
}

export class BalanceReader {
  private readonly native: NativeAccounts | undefined;
  private readonly programLamports = new Map<string, bigint>();

  constructor(private readonly svm: LiteSVM) {
    const inner = (svm as unknown as { inner?: Partial<NativeAccounts> }).inner;
    this.native = typeof inner?.getAccount === "function" ? (inner as NativeAccounts) : undefined;
  }

  /** Whether accounts are read through LiteSVM's native handle (the fast path). */
  get fast(): boolean {
    return this.native !== undefined;
  }

  private read(address: Address): AccountRead | undefined {
    if (this.native) {
      const acc = this.native.getAccount(addressBytes(address));
      if (!acc) return undefined;
      const owner = acc.owner();
      return {
        lamports: acc.lamports(),
        executable: acc.executable(),
        data: acc.data(),
        ownerIsTokenProgram: TOKEN_PROGRAM_BYTES.equals(owner),
      };
    }
    const acc = this.svm.getAccount(address);
    if (!acc.exists) return undefined;
    return {
      lamports: acc.lamports,
      executable: acc.executable,
      data: acc.data as Uint8Array,
      ownerIsTokenProgram: acc.programAddress === TOKEN_PROGRAM_ADDRESS,
    };
  }

  /** Lamports of each account, and the token balances of those that are token accounts. */
  balances(accounts: readonly Address[]): { lamports: bigint[]; tokens: TokenBalance[] } {
    const lamports: bigint[] = [];
    const tokens: TokenBalance[] = [];
    accounts.forEach((address, accountIndex) => {
      const program = this.programLamports.get(address);
      if (program !== undefined) return void lamports.push(program);
      const acc = this.read(address);
      if (!acc) return void lamports.push(0n);
      lamports.push(acc.lamports);
      if (acc.executable) this.programLamports.set(address, acc.lamports);
      const token = decodeTokenAccount(acc.ownerIsTokenProgram, acc.data);
      if (token) tokens.push({ accountIndex, ...token });
    });
    return { lamports, tokens };
  }

  /** After an account was written directly (a genesis write, an airdrop): nothing remembered holds. */
  forget(): void {
    this.programLamports.clear();
  }
}
