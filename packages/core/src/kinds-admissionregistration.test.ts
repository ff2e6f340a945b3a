import { describe, expect, it } from 'vitest';
import type { KubeObject } from './api-meta.js';
import { applyDefaults } from './defaults.js';
import './kinds-admissionregistration.js';
import { validationErrors } from './validation.js';

const V = 'admissionregistration.k8s.io/v1';
const msgs = (o: KubeObject) => validationErrors(o).map((c) => `${c.field}: ${c.message}`);

describe('admissionregistration.k8s.io kinds', () => {
  it('defaults webhooks as the API server does and checks what admission relies on', () => {
    const cfg: KubeObject = {
      apiVersion: V,
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'deny' },
      webhooks: [
        { name: 'a.example.com', clientConfig: { url: 'https://127.0.0.1:9443/validate' }, sideEffects: 'None', admissionReviewVersions: ['v1'] },
        { name: 'a.example.com', clientConfig: { url: 'http://x' }, sideEffects: 'Some', admissionReviewVersions: [], timeoutSeconds: 31 },
      ],
    };
    applyDefaults(cfg);
    expect(cfg.webhooks[0]).toMatchObject({ failurePolicy: 'Fail', timeoutSeconds: 10, matchPolicy: 'Equivalent' });
    expect(msgs(cfg)).toEqual([
      'webhooks[1].name: Duplicate value: "a.example.com"',
      `webhooks[1].clientConfig.url: Invalid value: "http://x": 'https' is the only allowed URL scheme`,
      'webhooks[1].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
      'webhooks[1].admissionReviewVersions: Required value: must specify one of v1, v1beta1',
      'webhooks[1].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds',
    ]);
  });

  it('requires validations, match constraints and binding actions', () => {
    expect(msgs({ apiVersion: V, kind: 'ValidatingAdmissionPolicy', metadata: { name: 'p' }, spec: {} })).toEqual([
      'spec.validations: Required value: validations or auditAnnotations must contain at least one item',
      'spec.matchConstraints: Required value',
    ]);
    expect(msgs({ apiVersion: V, kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'b' }, spec: { policyName: 'p', validationActions: ['Block'] } })).toEqual([
      'spec.validationActions[0]: Unsupported value: "Block": supported values: "Deny", "Warn", "Audit"',
    ]);
  });
});
