// Equality label selectors as the CRI filters define them (every key must match exactly).
export function matchesLabels(labels: Record<string, string> | undefined, selector: Record<string, string> | undefined) {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector)) if ((labels ?? {})[k] !== v) return false;
  return true;
}
