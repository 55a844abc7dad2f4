/** Types of wan-traffic.mjs: the WAN proxy's records counted per paid call. */
export interface ProxyRequest {
  at: number;
  method: string;
  path: string;
  /** The JSON-RPC method(s) of an RPC request ("eth_call+eth_blockNumber" for a batch). */
  rpc?: string;
}
export interface Lane {
  requests: ProxyRequest[];
  connections: number;
  /** Upstream port → connections made to it. */
  connectionsTo: Record<string, number>;
}
export interface Mark {
  requests: number;
  connections: number;
  connectionsTo: Record<string, number>;
}
export interface Tally {
  service: number;
  rpc: number;
  kinds: Record<string, number>;
}
export function kindOf(request: ProxyRequest): string;
export function mark(lane: Lane): Mark;
export function tally(requests: ProxyRequest[], calls: number): Tally;
export function perCall(
  lane: Lane,
  since: Mark,
  calls: number,
  upstreams?: Record<string, string>,
): Tally & { connections: number; connectionsTo: Record<string, number> };
export function minus(all: Tally, hot: Tally): Tally;
