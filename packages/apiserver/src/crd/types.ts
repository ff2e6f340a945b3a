// The apiextensions.k8s.io/v1 types the CRD code reads (the schema lives in @kemu/core/schema).
import type { KubeObject } from '@kemu/core';

/** A node of an OpenAPI v3 schema as CRDs carry it (JSON names, including the x-kubernetes-* extensions). */
export interface JSONSchemaProps {
  type?: string;
  format?: string;
  description?: string;
  properties?: Record<string, JSONSchemaProps>;
  required?: string[];
  items?: JSONSchemaProps;
  additionalProperties?: boolean | JSONSchemaProps;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  multipleOf?: number;
  minProperties?: number;
  maxProperties?: number;
  nullable?: boolean;
  allOf?: JSONSchemaProps[];
  anyOf?: JSONSchemaProps[];
  oneOf?: JSONSchemaProps[];
  not?: JSONSchemaProps;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
  [k: string]: unknown;
}

export interface CustomResourceColumnDefinition {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

export interface CustomResourceDefinitionVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  schema?: { openAPIV3Schema?: JSONSchemaProps };
  subresources?: {
    status?: Record<string, never>;
    scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  };
  additionalPrinterColumns?: CustomResourceColumnDefinition[];
  selectableFields?: { jsonPath: string }[];
}

export interface CustomResourceDefinitionNames {
  plural: string;
  singular?: string;
  shortNames?: string[];
  kind: string;
  listKind?: string;
  categories?: string[];
}

export interface CustomResourceDefinition extends KubeObject {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  spec: {
    group: string;
    names: CustomResourceDefinitionNames;
    scope: 'Namespaced' | 'Cluster';
    versions: CustomResourceDefinitionVersion[];
    conversion?: { strategy: string; webhook?: unknown };
    preserveUnknownFields?: boolean;
  };
  status?: {
    conditions?: { type: string; status: string; lastTransitionTime?: string; reason?: string; message?: string }[];
    acceptedNames?: CustomResourceDefinitionNames;
    storedVersions?: string[];
  };
}
