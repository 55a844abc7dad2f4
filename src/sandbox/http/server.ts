/**
 * The sandbox's Node HTTP server on 127.0.0.1: slow clients bounded by a request timeout
 * (checked often enough to matter), and a stop that drains before it cuts connections.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  port: number,
  requestTimeout: number,
): Promise<{ server: Server; port: number }> {
  // Node checks requestTimeout and headersTimeout only every connectionsCheckingInterval
  // (30 s by default): a slow client would hold its connection that long, whatever the timeout.
  const server: Server = createServer(
    { connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(requestTimeout / 4))) },
    (req, res) => void handler(req, res),
  );
  server.requestTimeout = requestTimeout;
  server.headersTimeout = Math.min(requestTimeout, 10_000);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", fail);
      ok();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/** Stops accepting, lets idle connections go at once and busy ones finish for up to 2 s. */
export function stopServer(server: Server): Promise<void> {
  return new Promise<void>((ok) => {
    server.close(() => ok());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 2_000).unref();
  });
}
