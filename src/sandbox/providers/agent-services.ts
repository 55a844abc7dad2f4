/**
 * The seeded marketplace of agent services that `POST /agent-services/search` searches
 * and `agent-services.purchase` hires from.
 */
import { z } from "zod";
import { formatDecimal, parseDecimal } from "../../domain/money.js";

export interface AgentService {
  serviceId: string;
  name: string;
  provider: string;
  taskTypes: string[];
  description: string;
  price: bigint;
  guarantees: { maxDeliverySeconds: number; refundOnFailure: boolean; accuracySla?: string };
  deliveryModes: string[];
  rating: string;
}

const svc = (
  serviceId: string,
  name: string,
  taskTypes: string[],
  price: string,
  guarantees: AgentService["guarantees"],
  description: string,
  rating: string,
): AgentService => ({
  serviceId,
  name,
  provider: "sandbox-agent-market",
  taskTypes,
  description,
  price: parseDecimal(price)!,
  guarantees,
  deliveryModes: ["json", "text"],
  rating,
});

export const AGENT_SERVICES: readonly AgentService[] = [
  svc(
    "svc_translate01",
    "Polyglot Translate",
    ["translation"],
    "0.25",
    { maxDeliverySeconds: 60, refundOnFailure: true },
    "Translates documents between 40 languages.",
    "4.7",
  ),
  svc(
    "svc_translate02",
    "Legal Translate Pro",
    ["translation", "legal"],
    "4.50",
    { maxDeliverySeconds: 3600, refundOnFailure: true, accuracySla: "99%" },
    "Certified legal translation with human review.",
    "4.9",
  ),
  svc(
    "svc_summarize01",
    "Brief",
    ["summarization"],
    "0.10",
    { maxDeliverySeconds: 30, refundOnFailure: false },
    "Summarizes long text into key points.",
    "4.3",
  ),
  svc(
    "svc_research01",
    "Deep Research",
    ["research", "summarization"],
    "3.00",
    { maxDeliverySeconds: 1800, refundOnFailure: true },
    "Researches a question across sources and cites them.",
    "4.8",
  ),
  svc(
    "svc_codereview01",
    "Review Bot",
    ["code-review"],
    "1.20",
    { maxDeliverySeconds: 600, refundOnFailure: true },
    "Reviews a diff for bugs, security and style.",
    "4.6",
  ),
  svc(
    "svc_codegen01",
    "Scaffold",
    ["code-generation"],
    "2.00",
    { maxDeliverySeconds: 900, refundOnFailure: false },
    "Generates project scaffolding from a spec.",
    "4.1",
  ),
  svc(
    "svc_data01",
    "Tabular Cleaner",
    ["data-cleaning"],
    "0.75",
    { maxDeliverySeconds: 300, refundOnFailure: true },
    "Cleans and normalizes CSV or JSON tables.",
    "4.4",
  ),
  svc(
    "svc_scrape01",
    "Page Extract",
    ["web-extraction"],
    "0.05",
    { maxDeliverySeconds: 20, refundOnFailure: false },
    "Extracts structured data from a public web page.",
    "3.9",
  ),
  svc(
    "svc_design01",
    "Logo Sketch",
    ["design"],
    "8.00",
    { maxDeliverySeconds: 7200, refundOnFailure: true },
    "Drafts three logo concepts from a brief.",
    "4.5",
  ),
  svc(
    "svc_legal01",
    "Contract Check",
    ["legal", "review"],
    "12.00",
    { maxDeliverySeconds: 14400, refundOnFailure: true, accuracySla: "lawyer-reviewed" },
    "Flags risky clauses in a contract.",
    "4.8",
  ),
  svc(
    "svc_transcribe01",
    "Transcribe",
    ["transcription"],
    "0.40",
    { maxDeliverySeconds: 600, refundOnFailure: true },
    "Transcribes audio from a public URL.",
    "4.2",
  ),
  svc(
    "svc_seo01",
    "SEO Audit",
    ["research", "marketing"],
    "20.00",
    { maxDeliverySeconds: 86400, refundOnFailure: false },
    "Audits a site and proposes fixes.",
    "4.0",
  ),
];

const BY_ID = new Map(AGENT_SERVICES.map((s) => [s.serviceId, s]));

export function findAgentService(serviceId: string): AgentService | undefined {
  return BY_ID.get(serviceId);
}

const Decimal = z
  .string()
  .regex(/^(0|[1-9][0-9]*)(\.[0-9]{1,6})?$/, "must be a decimal string with at most 6 decimals");

export const AgentServicesSearch = z.strictObject({
  taskType: z.string().min(1).max(64).optional(),
  query: z.string().min(1).max(200).optional(),
  priceBand: z
    .strictObject({ min: Decimal.optional(), max: Decimal.optional(), currency: z.literal("USDC").optional() })
    .optional(),
  guarantees: z
    .strictObject({
      refundOnFailure: z.boolean().optional(),
      maxDeliverySeconds: z.int().min(1).optional(),
      accuracySla: z.boolean().optional(),
    })
    .optional(),
  limit: z.int().min(1).max(50).default(20),
});
export type AgentServicesSearch = z.infer<typeof AgentServicesSearch>;

export function publicService(s: AgentService) {
  return {
    serviceId: s.serviceId,
    name: s.name,
    provider: s.provider,
    description: s.description,
    taskTypes: s.taskTypes,
    price: { amount: formatDecimal(s.price), currency: "USDC" },
    guarantees: s.guarantees,
    deliveryModes: s.deliveryModes,
    rating: s.rating,
  };
}

export function searchAgentServices(q: AgentServicesSearch) {
  const min = q.priceBand?.min !== undefined ? parseDecimal(q.priceBand.min) : undefined;
  const max = q.priceBand?.max !== undefined ? parseDecimal(q.priceBand.max) : undefined;
  const words = q.query?.toLowerCase().split(/\s+/).filter(Boolean) ?? [];
  const items = AGENT_SERVICES.filter((s) => {
    if (q.taskType && !s.taskTypes.includes(q.taskType)) return false;
    if (min !== undefined && s.price < min) return false;
    if (max !== undefined && s.price > max) return false;
    const g = q.guarantees;
    if (g?.refundOnFailure && !s.guarantees.refundOnFailure) return false;
    if (g?.maxDeliverySeconds !== undefined && s.guarantees.maxDeliverySeconds > g.maxDeliverySeconds) return false;
    if (g?.accuracySla && !s.guarantees.accuracySla) return false;
    const text = `${s.name} ${s.description} ${s.taskTypes.join(" ")}`.toLowerCase();
    return words.every((w) => text.includes(w));
  })
    .sort((a, b) => (a.price < b.price ? -1 : a.price > b.price ? 1 : a.serviceId.localeCompare(b.serviceId)))
    .slice(0, q.limit);
  return {
    items: items.map(publicService),
    taskTypes: [...new Set(AGENT_SERVICES.flatMap((s) => s.taskTypes))].sort(),
  };
}
