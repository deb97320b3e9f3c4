/**
 * Resource quantities written as null (`nvidia.com/gpu: null`, what an unset YAML anchor or a template
 * leaves): the API server's decoder accepts them and stores 0, so a GPU limit of null silently gives
 * the container no GPU. The strict schema check follows the decoder (a null is an absent field), so
 * this rule names the case the decoder turns into a wrong value.
 */
export function nullQuantityErrors(o: unknown, at = ''): string[] {
  if (Array.isArray(o)) return o.flatMap((x, i) => nullQuantityErrors(x, `${at}[${i}]`));
  if (o === null || typeof o !== 'object') return [];
  return Object.entries(o as Record<string, unknown>).flatMap(([k, v]) => {
    const path = at ? `${at}.${k}` : k;
    if ((k === 'limits' || k === 'requests') && v !== null && typeof v === 'object' && !Array.isArray(v))
      return Object.entries(v as Record<string, unknown>)
        .filter(([, q]) => q === null)
        .map(
          ([name]) => `${path}.${name}: null is stored as the quantity 0; give the amount, or leave the resource out`,
        );
    return nullQuantityErrors(v, path);
  });
}
