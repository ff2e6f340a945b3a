// Types for the parts of hpack.js (RFC 7541 HPACK) this package uses; the library ships none.
declare module 'hpack.js' {
  import type { Duplex } from 'node:stream';

  export interface HpackHeader {
    name: string;
    value: string;
    /** Literal never indexed (RFC 7541 6.2.3): a header an intermediary must not index either. */
    neverIndex?: boolean;
    /** false: encode as a literal that is not added to the dynamic table. */
    incremental?: boolean;
    huffman?: boolean;
  }

  export interface HpackTableOptions {
    table: { size: number };
  }

  /** Writable side takes header-block bytes; `execute()` decodes them; the readable side yields headers. */
  export interface Decompressor extends Duplex {
    execute(cb?: (err: Error | null) => void): void;
    read(): HpackHeader | null;
  }

  /** Writable side takes a list of headers per block; the readable side yields the encoded bytes. */
  export interface Compressor extends Duplex {
    read(): Buffer | null;
  }

  const hpack: {
    decompressor: { create(options: HpackTableOptions): Decompressor };
    compressor: { create(options: HpackTableOptions): Compressor };
  };
  export default hpack;
}
