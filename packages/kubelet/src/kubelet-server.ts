// The kubelet's HTTP endpoints for monitoring: /stats/summary (JSON), /metrics/resource and
// /metrics/cadvisor (Prometheus text), /healthz. Read-only, served on loopback by default.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pod } from '@kemu/core';
import { cadvisorMetrics, resourceMetrics } from './metrics-resource.js';
import type { Summary } from './stats-summary.js';

export interface KubeletServerSource {
  summary(): Promise<Summary>;
  pods(): Pod[];
}

export class KubeletServer {
  private server?: http.Server;

  constructor(private readonly source: KubeletServerSource) {}

  handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://kubelet');
    const send = (code: number, type: string, body: string) => {
      res.writeHead(code, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain', 'method not allowed\n');
    try {
      switch (url.pathname) {
        case '/healthz':
          return send(200, 'text/plain', 'ok');
        case '/stats/summary':
          return send(200, 'application/json', JSON.stringify(await this.source.summary()));
        case '/metrics/resource':
          return send(200, 'text/plain; version=0.0.4; charset=utf-8', resourceMetrics(await this.source.summary()));
        case '/metrics/cadvisor':
          return send(200, 'text/plain; version=0.0.4; charset=utf-8', cadvisorMetrics(await this.source.summary(), this.source.pods()));
        default:
          return send(404, 'text/plain', '404 page not found\n');
      }
    } catch (err) {
      return send(500, 'text/plain', `${(err as Error).message}\n`);
    }
  };

  /** Listens on host:port (port 0: any free one); resolves to the URL it serves. */
  async listen(host = '127.0.0.1', port = 0): Promise<string> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const a = server.address() as AddressInfo;
    return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    s.closeAllConnections?.();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
