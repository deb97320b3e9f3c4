import { escapeKubeletExpansion, kubeletExpand } from '../../src/common/kubelet-expansion';

const VARS = { HF_TOKEN: 'hf_secret', A: 'x' };

test('the kubelet expands $(VAR) and turns $$ into $', () => {
  expect(kubeletExpand('$(HF_TOKEN)', VARS)).toBe('hf_secret');
  expect(kubeletExpand('a$$(A)b', VARS)).toBe('a$(A)b');
  expect(kubeletExpand('$(UNSET)', VARS)).toBe('$(UNSET)');
  expect(kubeletExpand('$$$$', VARS)).toBe('$$');
});

test.each(['$(HF_TOKEN)', 'rev$$(A)', 'a$b', '$', '$$', 'x$(A', '$($(A))', 'plain'])(
  'an escaped string reaches the program as written: %s',
  s => {
    expect(kubeletExpand(escapeKubeletExpansion(s), VARS)).toBe(s);
  },
);
