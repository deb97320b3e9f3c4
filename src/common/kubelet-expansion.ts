/**
 * The kubelet expands `$(VAR)` in a container's `command`, `args` and env `value`s, and turns `$$`
 * into `$` (k8s.io/kubernetes third_party/forked/golang/expansion/expand.go: `$$` is the escape,
 * `$(NAME)` of a defined variable is replaced, anything else is left as written). A user's string
 * placed there verbatim could therefore read another variable of the container (`$(HF_TOKEN)` in a
 * revision puts the token into the log and a request path). Doubling every `$` makes the kubelet
 * hand the program exactly the string written.
 */
export function escapeKubeletExpansion(s: string): string {
  return s.replace(/\$/g, '$$$$');
}

/** What the kubelet makes of a command, args or env value as written (for tests and checks). */
export function kubeletExpand(s: string, vars: Readonly<Record<string, string>>): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== '$' || i + 1 >= s.length) {
      out += s[i];
    } else if (s[i + 1] === '$') {
      out += '$';
      i++;
    } else if (s[i + 1] === '(') {
      const end = s.indexOf(')', i + 2);
      if (end < 0) {
        out += s.slice(i);
        break;
      }
      const name = s.slice(i + 2, end);
      out += name in vars ? vars[name] : s.slice(i, end + 1);
      i = end;
    } else {
      out += s[i];
    }
  }
  return out;
}
