// Kubernetes protobuf bodies: the envelope, and every kind's message encoded and decoded from its schema.
export { decodeMessage, encodeMessage, resetCodecCache } from './codec.js';
export {
  decodeEnvelope,
  decodeObjectBytes,
  encodeEnvelope,
  encodeObject,
  type Envelope,
  isEnvelope,
  MAGIC,
  PROTOBUF_CONTENT_TYPE,
  protobufType,
  supportsProtobuf,
} from './envelope.js';
