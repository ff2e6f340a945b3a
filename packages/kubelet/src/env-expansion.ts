// `$(VAR)` references in env values, command, args and subPathExpr, expanded as the kubelet does
// (upstream's forked Go `expansion` package): `$$` is an escaped `$`, `$(NAME)` is replaced by the mapping's
// value, an unresolvable reference stays as written, and any other `$` is kept literally.

/** A mapping over the given maps, first match wins; an unknown name maps back to `$(name)`. */
export function mappingFuncFor(...context: ReadonlyMap<string, string>[]): (name: string) => string {
  return (name) => {
    for (const vars of context) {
      const v = vars.get(name);
      if (v !== undefined) return v;
    }
    return `$(${name})`;
  };
}

/** Expand every `$(VAR)` of `input` through `mapping`. */
export function expand(input: string, mapping: (name: string) => string): string {
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const rest = input.slice(cursor + 1);
    let advance = 1;
    if (rest[0] === '$') {
      out += '$'; // escaped operator
    } else if (rest[0] === '(') {
      const close = rest.indexOf(')', 1);
      if (close < 0) out += '$('; // incomplete reference: kept, and scanning goes on after the `(`
      else {
        out += mapping(rest.slice(1, close));
        advance = close + 1;
      }
    } else {
      out += `$${rest[0]}`; // a lone operator and the character after it
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}
