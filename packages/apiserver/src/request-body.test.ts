import { describe, expect, it } from 'vitest';
import { parseJsonBody } from './request-body.js';

describe('parseJsonBody', () => {
  it('parses a JSON body, and names an empty or malformed one in a 400', () => {
    expect(parseJsonBody(Buffer.from(' {"a":[1]}\n'))).toEqual({ a: [1] });
    for (const empty of ['', ' \n\t']) expect(() => parseJsonBody(Buffer.from(empty))).toThrow(expect.objectContaining({ code: 400, message: 'the request body is empty' }));
    expect(() => parseJsonBody(Buffer.from('{"a":'))).toThrow(expect.objectContaining({ code: 400, message: expect.stringMatching(/^the request body is not valid JSON: /) }));
  });
});
