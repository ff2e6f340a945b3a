// The APIs @kemu/proto is generated from: one .proto entry point each, the protobuf package it
// declares, and the module written for it under packages/proto/src/generated/.
export const apis = [
  { module: 'cri', file: 'cri/runtime/v1/api.proto', pkg: 'runtime.v1' },
  { module: 'csi', file: 'csi/v1/csi.proto', pkg: 'csi.v1' },
  { module: 'pluginregistration', file: 'pluginregistration/api.proto', pkg: 'pluginregistration' },
  { module: 'deviceplugin', file: 'deviceplugin/v1beta1/api.proto', pkg: 'v1beta1' },
];
