/**
 * What a store refuses with, as errors the engine tells apart by class: a compare-and-set
 * lost, a key or quote already recorded, a freeze, a schema newer than this build. Each is
 * thrown with nothing written.
 */
import type { Freeze } from "./port.js";

/** A state change that lost its compare-and-set: another driver holds or moved the intent. */
export class LeaseLost extends Error {
  constructor(readonly intentId: string) {
    super(`intent ${intentId} is being driven by another call`);
    this.name = "LeaseLost";
  }
}

/** A new intent's key is already recorded (another call, maybe another server, was first). */
export class IntentKeyTaken extends Error {
  constructor(readonly intentKey: string) {
    super(`intent key ${intentKey} is already recorded`);
    this.name = "IntentKeyTaken";
  }
}

/**
 * A signed proof's quote id — the memo its transfer carries — already names another payment:
 * the store refused to record it (nothing written), so that proof never leaves the process.
 * Two purchases paying with one memo could not be told apart on chain (a seller that gives
 * two resources the same memo, or a service that hands out a quote twice).
 */
export class QuoteTaken extends Error {
  constructor(readonly quoteId: string) {
    super(`quote ${quoteId} already names another payment`);
    this.name = "QuoteTaken";
  }
}

/**
 * A person froze payments: the store refused to record a signed proof (nothing written), so
 * that proof never leaves the process.
 */
export class PaymentsFrozen extends Error {
  constructor(readonly freeze: Freeze) {
    super("payments are frozen by a person");
    this.name = "PaymentsFrozen";
  }
}

/** The store holds a newer schema than this build knows: refuse to run rather than guess. */
export class SchemaTooNew extends Error {
  constructor(
    readonly found: number,
    readonly known: number,
    where: string,
  ) {
    super(
      `the journal (${where}) is at schema version ${found}, newer than this build knows (${known}); upgrade paid-actions-mcp`,
    );
    this.name = "SchemaTooNew";
  }
}
