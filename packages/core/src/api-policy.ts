// policy/v1 PodDisruptionBudget and autoscaling/v2 HorizontalPodAutoscaler.
import type { IntOrString } from './api-apps.js';
import type { Condition, KubeObject, LabelSelector, ObjectMeta } from './api-meta.js';

export interface PodDisruptionBudget extends KubeObject {
  apiVersion: 'policy/v1';
  kind: 'PodDisruptionBudget';
  metadata: ObjectMeta;
  spec: {
    minAvailable?: IntOrString;
    maxUnavailable?: IntOrString;
    selector?: LabelSelector;
    unhealthyPodEvictionPolicy?: 'IfHealthyBudget' | 'AlwaysAllow';
  };
  status?: {
    observedGeneration?: number;
    disruptedPods?: Record<string, string>;
    disruptionsAllowed: number;
    currentHealthy: number;
    desiredHealthy: number;
    expectedPods: number;
    conditions?: Condition[];
  };
}

export interface MetricTarget {
  type: 'Utilization' | 'Value' | 'AverageValue';
  value?: string;
  averageValue?: string;
  averageUtilization?: number;
}

export interface MetricSpec {
  type: 'Resource' | 'ContainerResource' | 'Pods' | 'Object' | 'External';
  resource?: { name: string; target: MetricTarget };
  [other: string]: unknown;
}

export interface HorizontalPodAutoscaler extends KubeObject {
  apiVersion: 'autoscaling/v2';
  kind: 'HorizontalPodAutoscaler';
  metadata: ObjectMeta;
  spec: {
    scaleTargetRef: { apiVersion?: string; kind: string; name: string };
    minReplicas?: number;
    maxReplicas: number;
    metrics?: MetricSpec[];
    behavior?: Record<string, unknown>;
  };
  status?: {
    observedGeneration?: number;
    lastScaleTime?: string;
    currentReplicas?: number;
    desiredReplicas: number;
    currentMetrics?: unknown[];
    conditions?: Condition[];
  };
}
