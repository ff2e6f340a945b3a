/**
 * BGP error codes and subcodes (RFC 4271 §4.5, RFC 4486, RFC 5492, RFC 7313), defined once. Every protocol
 * error raised while decoding or running a session is a {@link BgpError}; the session turns it into exactly
 * one NOTIFICATION and closes that session only.
 */

export const ErrorCode = {
  MessageHeader: 1,
  OpenMessage: 2,
  UpdateMessage: 3,
  HoldTimerExpired: 4,
  FsmError: 5,
  Cease: 6,
  RouteRefreshMessage: 7,
} as const;

export const HeaderSubcode = {
  ConnectionNotSynchronized: 1,
  BadMessageLength: 2,
  BadMessageType: 3,
} as const;

export const OpenSubcode = {
  UnsupportedVersionNumber: 1,
  BadPeerAs: 2,
  BadBgpIdentifier: 3,
  UnsupportedOptionalParameter: 4,
  UnacceptableHoldTime: 6,
  UnsupportedCapability: 7,
} as const;

export const UpdateSubcode = {
  MalformedAttributeList: 1,
  UnrecognizedWellKnownAttribute: 2,
  MissingWellKnownAttribute: 3,
  AttributeFlagsError: 4,
  AttributeLengthError: 5,
  InvalidOriginAttribute: 6,
  InvalidNextHopAttribute: 8,
  OptionalAttributeError: 9,
  InvalidNetworkField: 10,
  MalformedAsPath: 11,
} as const;

export const FsmSubcode = {
  Unspecified: 0,
  UnexpectedInOpenSent: 1,
  UnexpectedInOpenConfirm: 2,
  UnexpectedInEstablished: 3,
} as const;

export const CeaseSubcode = {
  MaximumPrefixes: 1,
  AdministrativeShutdown: 2,
  PeerDeconfigured: 3,
  AdministrativeReset: 4,
  ConnectionRejected: 5,
  OtherConfigurationChange: 6,
  ConnectionCollisionResolution: 7,
  OutOfResources: 8,
} as const;

export const RouteRefreshSubcode = {
  InvalidMessageLength: 1,
} as const;

const codeNames: Record<number, string> = {
  1: 'Message Header Error',
  2: 'OPEN Message Error',
  3: 'UPDATE Message Error',
  4: 'Hold Timer Expired',
  5: 'Finite State Machine Error',
  6: 'Cease',
  7: 'ROUTE-REFRESH Message Error',
};

const subcodeNames: Record<number, Record<number, string>> = {
  1: { 1: 'Connection Not Synchronized', 2: 'Bad Message Length', 3: 'Bad Message Type' },
  2: {
    1: 'Unsupported Version Number',
    2: 'Bad Peer AS',
    3: 'Bad BGP Identifier',
    4: 'Unsupported Optional Parameter',
    6: 'Unacceptable Hold Time',
    7: 'Unsupported Capability',
  },
  3: {
    1: 'Malformed Attribute List',
    2: 'Unrecognized Well-known Attribute',
    3: 'Missing Well-known Attribute',
    4: 'Attribute Flags Error',
    5: 'Attribute Length Error',
    6: 'Invalid ORIGIN Attribute',
    8: 'Invalid NEXT_HOP Attribute',
    9: 'Optional Attribute Error',
    10: 'Invalid Network Field',
    11: 'Malformed AS_PATH',
  },
  5: {
    1: 'Unexpected Message in OpenSent State',
    2: 'Unexpected Message in OpenConfirm State',
    3: 'Unexpected Message in Established State',
  },
  6: {
    1: 'Maximum Number of Prefixes Reached',
    2: 'Administrative Shutdown',
    3: 'Peer De-configured',
    4: 'Administrative Reset',
    5: 'Connection Rejected',
    6: 'Other Configuration Change',
    7: 'Connection Collision Resolution',
    8: 'Out of Resources',
  },
  7: { 1: 'Invalid Message Length' },
};

/** Human-readable "code/subcode" text, e.g. `OPEN Message Error / Bad Peer AS`. */
export function describeError(code: number, subcode: number): string {
  const c = codeNames[code] ?? `error code ${code}`;
  if (subcode === 0) return c;
  const s = subcodeNames[code]?.[subcode] ?? `subcode ${subcode}`;
  return `${c} / ${s}`;
}

/** A protocol error that ends a session with a NOTIFICATION carrying `code`, `subcode` and `data`. */
export class BgpError extends Error {
  override readonly name = 'BgpError';
  constructor(
    readonly code: number,
    readonly subcode: number,
    readonly data: Uint8Array = new Uint8Array(0),
    detail?: string,
  ) {
    super(detail ? `${describeError(code, subcode)}: ${detail}` : describeError(code, subcode));
  }
}

/** A configuration or usage error (CLI, config file, API arguments); `path` names the offending field. */
export class BgpConfigError extends Error {
  override readonly name = 'BgpConfigError';
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(path ? `${path}: ${detail}` : detail);
  }
}
