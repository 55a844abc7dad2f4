/**
 * The facilitator as a `FacilitatorClient` in this process, for the sandbox's own paid
 * resources (resources/): the same three calls `HTTPFacilitatorClient` makes, without the
 * round trip over loopback and without its rate limit. Payloads cross as JSON, as on the wire.
 */
import type { FacilitatorClient } from "@x402/core/server";
import type {
  PaymentPayload,
  PaymentRequirements,
  SettleResponse,
  SupportedResponse,
  VerifyResponse,
} from "@x402/core/types";
import type { FacilitatorRequest, SandboxFacilitator } from "./facilitator.js";

const wire = <T>(value: T): T =>
  JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))) as T;

export function inProcessFacilitatorClient(facilitator: SandboxFacilitator): FacilitatorClient {
  const request = (paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements): FacilitatorRequest =>
    wire({ x402Version: paymentPayload.x402Version, paymentPayload, paymentRequirements });
  return {
    async getSupported(): Promise<SupportedResponse> {
      return wire(facilitator.supported());
    },
    async verify(payload, requirements): Promise<VerifyResponse> {
      return facilitator.verify(request(payload, requirements));
    },
    async settle(payload, requirements): Promise<SettleResponse> {
      return facilitator.settle(request(payload, requirements));
    },
  };
}
