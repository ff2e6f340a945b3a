// OpenAPI v2 and v3 documents generated from the kind schemas, for the server's /openapi routes.
export { type OpenApiDocument, type OpenApiOptions, openApiV2, openApiV2Protobuf, openApiV3, openApiV3Index } from './documents.js';
export { groupVersionPath, servedKinds } from './served-kinds.js';
export { OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_CONTENT_TYPE, swaggerToProtobuf } from './v2-protobuf.js';
