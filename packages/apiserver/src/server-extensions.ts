// What a composed cluster adds to the API server: pod logs and the streaming subresources need a node's
// runtime, traces the cluster network, resource metrics the kubelets. Each is optional; without it the
// subresource is a 404 or 503.
import type { KubeObject } from '@kemu/core';

export interface ExecResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export interface PodLogOptions {
  container?: string;
  tail?: number;
  follow?: boolean;
  previous?: boolean;
  timestamps?: boolean;
  sinceSeconds?: number;
  sinceTime?: string;
  limitBytes?: number;
}

export interface StreamOptions {
  container?: string;
  command?: string[];
  stdin?: boolean;
  stdout?: boolean;
  stderr?: boolean;
  tty?: boolean;
  ports?: number[];
}

export interface ApiExtensions {
  /** The pod's log as text; with `follow`, an async iterable of chunks that ends when the container does. */
  podLog?(namespace: string, name: string, opts: PodLogOptions): Promise<string | AsyncIterable<string | Buffer>>;
  /** Run a command to completion (kemu's own `exec` without a stream). */
  podExec?(namespace: string, name: string, opts: { container?: string; command: string[] }): Promise<ExecResult>;
  /**
   * The URL of the node's CRI streaming server for exec/attach/portforward (what the CRI Exec, Attach and
   * PortForward calls return); the API server relays the client's upgrade there, as kubelet does.
   */
  podStreamUrl?(namespace: string, name: string, kind: 'exec' | 'attach' | 'portforward', opts: StreamOptions): Promise<string>;
  /**
   * metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics of every node that answers, as metrics-server would
   * serve them through the aggregation layer; with it the API server serves that group (kubectl top).
   */
  resourceMetrics?(): Promise<{ nodes: KubeObject[]; pods: KubeObject[] }>;
  trace?(from: string, to: string): Promise<unknown>;
  info?(): Promise<unknown>;
  /**
   * Nodes added to and removed from the running cluster (`kemu node add|remove`): POST /kemu/nodes with a
   * {@link NodeAddRequest}, DELETE /kemu/nodes/NAME. Errors are StatusErrors (400, 404, 409).
   */
  nodes?: {
    add(req: NodeAddRequest): Promise<{ names: string[] }>;
    remove(name: string): Promise<void>;
  };
}

export interface NodeAddRequest {
  count?: number;
  name?: string;
  taints?: Array<{ key: string; value?: string; effect: string }>;
  labels?: Record<string, string>;
}
