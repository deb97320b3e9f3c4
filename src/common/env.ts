import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Validator } from '../validation/validate';

/**
 * Downward-API fields a container may read through `fieldRef` (Kubernetes
 * `pkg/apis/core/validation/validation.go`, `validEnvDownwardAPIFieldPathExpressions`, plus the
 * label and annotation subscripts).
 */
const FIELD_PATHS = new Set([
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.serviceAccountName',
  'status.hostIP',
  'status.podIP',
  'status.podIPs',
  // Not status.hostIPs: allowed only with the PodHostIPs gate (AllowHostIPsField), alpha and off in 1.28.
]);
const FIELD_SUBSCRIPT = /^metadata\.(labels|annotations)\['([^']+)'\]$/;

const RESOURCE_FIELDS = new Set([
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.ephemeral-storage',
]);

/** The value of one environment variable of a workload's main container. */
export class EnvValue {
  /** A literal value. A plain string in an `env` map means the same. */
  static fromValue(value: string): EnvValue {
    return new EnvValue({ kind: 'value', value });
  }

  /**
   * A key of a Secret. The kubelet reads it once, at container start: for a credential that
   * rotates, mount a `RotatingGpuSecret` instead.
   */
  static fromSecretKey(secretName: string, key: string, optional?: boolean): EnvValue {
    return new EnvValue({ kind: 'secret', name: secretName, key, optional });
  }

  /** A key of a ConfigMap, read once at container start. */
  static fromConfigMapKey(configMapName: string, key: string, optional?: boolean): EnvValue {
    return new EnvValue({ kind: 'configMap', name: configMapName, key, optional });
  }

  /** A field of the pod, e.g. `metadata.name`, `status.podIP` or `metadata.labels['team']`. */
  static fromFieldRef(fieldPath: string): EnvValue {
    return new EnvValue({ kind: 'field', fieldPath });
  }

  /** A resource request or limit of the main container, e.g. `limits.memory`. */
  static fromResource(resource: string): EnvValue {
    return new EnvValue({ kind: 'resource', resource });
  }

  private constructor(private readonly spec: EnvSpec) {}

  /** @internal The env var, validated; `prop` names it in errors (e.g. `env.HF_TOKEN`). */
  _toEnvVar(v: Validator, prop: string, name: string): k8s.EnvVar {
    const s = this.spec;
    switch (s.kind) {
      case 'value':
        if (typeof s.value !== 'string') v.fail(prop, 'must be a string', s.value);
        literalEnvValue(v, prop, name, s.value);
        return { name, value: s.value };
      case 'secret':
        v.dnsSubdomain(`${prop} secret name`, s.name);
        configKey(v, `${prop} key`, s.key);
        if (s.optional !== undefined) v.boolean(`${prop} optional`, s.optional, false);
        return { name, valueFrom: { secretKeyRef: { name: s.name, key: s.key, ...optional(s.optional) } } };
      case 'configMap':
        v.dnsSubdomain(`${prop} ConfigMap name`, s.name);
        configKey(v, `${prop} key`, s.key);
        if (s.optional !== undefined) v.boolean(`${prop} optional`, s.optional, false);
        return { name, valueFrom: { configMapKeyRef: { name: s.name, key: s.key, ...optional(s.optional) } } };
      case 'field':
        if (!FIELD_PATHS.has(s.fieldPath) && !FIELD_SUBSCRIPT.test(s.fieldPath)) {
          v.fail(
            prop,
            `must be a field the downward API exposes to env at the 1.28 floor (${[...FIELD_PATHS].join(', ')}, metadata.labels['<key>'] or metadata.annotations['<key>'])`,
            s.fieldPath,
          );
        }
        // The subscript is a label or annotation key (ValidateQualifiedName).
        if (FIELD_SUBSCRIPT.test(s.fieldPath)) v.qualifiedName(`${prop} key`, FIELD_SUBSCRIPT.exec(s.fieldPath)![2]);
        return { name, valueFrom: { fieldRef: { fieldPath: s.fieldPath } } };
      case 'resource':
        if (!RESOURCE_FIELDS.has(s.resource))
          v.fail(prop, `must be one of ${[...RESOURCE_FIELDS].join(', ')}`, s.resource);
        return { name, valueFrom: { resourceFieldRef: { resource: s.resource } } };
    }
  }

  /** @internal The Secret this value reads, if any (a rotating Secret may not be read as env). */
  get _secretName(): string | undefined {
    return this.spec.kind === 'secret' ? this.spec.name : undefined;
  }
}

/**
 * Names whose value is a credential: a literal would put the secret in the pod spec, readable by
 * anyone who can read the workload (and in Git). Rules as data: a name matches when it is listed,
 * ends with one of the suffixes, or is a suffix itself (`API_KEY`, TGI's variable; `TOKEN`);
 * `notCredentials` are flags that merely end like one.
 */
export const CREDENTIAL_ENV = {
  names: ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'],
  suffixes: ['_TOKEN', '_API_KEY', '_APIKEY', '_PASSWORD', '_PASSWD', '_SECRET', '_SECRET_KEY', '_PRIVATE_KEY'],
  // huggingface_hub's flag (a boolean) that only names the token.
  notCredentials: ['HF_HUB_DISABLE_IMPLICIT_TOKEN'],
} as const;

/**
 * Variables whose URL receives the Hugging Face token with every Hub request (huggingface_hub
 * `constants.ENDPOINT` reads HF_ENDPOINT): over plain http it travels in clear.
 */
export const TOKEN_ENDPOINT_ENV: readonly string[] = ['HF_ENDPOINT'];

/** Whether a variable of this name holds a credential (see CREDENTIAL_ENV). */
export function isCredentialEnvName(name: string): boolean {
  const upper = name.toUpperCase();
  if ((CREDENTIAL_ENV.notCredentials as readonly string[]).includes(upper)) return false;
  return (
    (CREDENTIAL_ENV.names as readonly string[]).includes(upper) ||
    CREDENTIAL_ENV.suffixes.some(s => upper.endsWith(s) || upper === s.slice(1))
  );
}

/** Hosts that stay inside the pod: plain http to them never crosses a network. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(hostname) || hostname === '[::1]';
}

/**
 * Why a URL's host must not be a target, if it must not: link-local addresses (169.254.0.0/16,
 * fe80::/10), where clouds serve instance metadata and credentials (169.254.169.254 on AWS, GCP,
 * Azure, OCI), and the metadata names and addresses clouds use besides. `hostname` is WHATWG URL's,
 * which already turns decimal, hex and octal IPv4 forms into dotted quads.
 */
export function metadataTargetReason(hostname: string): string | undefined {
  const host = hostname.toLowerCase();
  if (/^169\.254\.\d+\.\d+$/.test(host))
    return 'a link-local address (169.254.0.0/16), where clouds serve instance metadata';
  if (/^\[fe[89ab][0-9a-f]?:/.test(host)) return 'a link-local address (fe80::/10)';
  // IPv4-mapped IPv6 as WHATWG URL writes it: ::ffff:a9fe:xxxx is ::ffff:169.254.x.x.
  if (/^\[::ffff:a9fe:[0-9a-f]{1,4}\]$/.test(host)) return 'a link-local address (169.254.0.0/16, IPv4-mapped)';
  if (METADATA_HOSTS.includes(host)) return 'a cloud metadata endpoint';
  return undefined;
}

/** Cloud metadata endpoints outside the link-local ranges. */
const METADATA_HOSTS = [
  'metadata.google.internal', // GCP
  'metadata', // GCP's short name
  '100.100.100.200', // Alibaba Cloud
  '[fd00:ec2::254]', // AWS IMDS over IPv6
];

/**
 * A literal env value, refused when it carries a credential (those come from a Secret, through
 * `EnvValue.fromSecretKey`) or sends the Hub token in clear. A `$(VAR)` reference or an empty value
 * is not a literal secret.
 */
export function literalEnvValue(v: Validator, prop: string, name: string, value: string): void {
  if (isCredentialEnvName(name) && value !== '' && !/^\$\([A-Za-z_][A-Za-z0-9_]*\)$/.test(value)) {
    v.failDescribed(
      prop,
      'must not be a literal: a credential in the pod spec is readable by anyone who can read the workload; ' +
        'use EnvValue.fromSecretKey(secretName, key)',
      `a literal value of ${value.length} characters`,
    );
  }
  if (TOKEN_ENDPOINT_ENV.includes(name)) {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      v.fail(prop, 'must be an absolute https:// URL', value);
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
      v.fail(
        prop,
        'must be an https:// URL (or http:// to a loopback address): the Hugging Face token is sent to it with every request',
        value,
      );
    }
  }
}

type EnvSpec =
  | { kind: 'value'; value: string }
  | { kind: 'secret' | 'configMap'; name: string; key: string; optional?: boolean }
  | { kind: 'field'; fieldPath: string }
  | { kind: 'resource'; resource: string };

function optional(o: boolean | undefined): { optional?: boolean } {
  return o === undefined ? {} : { optional: o };
}

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

/**
 * A ConfigMap or Secret key (apimachinery `IsConfigMapKey`): `[-._a-zA-Z0-9]+`, at most 253, not
 * `.`, and not starting with `..` (the kubelet's atomic writer owns those names).
 */
export function configKey(v: Validator, prop: string, key: string): string {
  if (typeof key === 'string' && key.startsWith('..')) {
    v.fail(prop, 'must not start with "..": the kubelet\'s atomic writer owns those names in the volume', key);
  }
  if (typeof key !== 'string' || !CONFIG_KEY.test(key) || key.length > 253 || key === '.') {
    v.fail(
      prop,
      'must be a valid ConfigMap or Secret key: letters, digits, "-", "_" and ".", at most 253 characters, not "."',
      key,
    );
  }
  return key;
}

/** Every variable of a ConfigMap or Secret as environment variables of the main container. */
export class EnvFrom {
  /** All keys of a ConfigMap, optionally with a name prefix. */
  static configMap(name: string, prefix?: string): EnvFrom {
    return new EnvFrom('configMap', name, prefix);
  }

  /** All keys of a Secret, optionally with a name prefix. Read once at container start. */
  static secret(name: string, prefix?: string): EnvFrom {
    return new EnvFrom('secret', name, prefix);
  }

  private constructor(
    private readonly kind: 'configMap' | 'secret',
    private readonly name: string,
    private readonly prefix?: string,
  ) {}

  /** @internal */
  _toSource(v: Validator, prop: string): k8s.EnvFromSource {
    v.dnsSubdomain(`${prop} name`, this.name);
    if (this.prefix !== undefined) v.envName(`${prop} prefix`, this.prefix);
    const ref = { name: this.name };
    return {
      ...(this.prefix !== undefined ? { prefix: this.prefix } : {}),
      ...(this.kind === 'configMap' ? { configMapRef: ref } : { secretRef: ref }),
    };
  }

  /** @internal */
  get _secretName(): string | undefined {
    return this.kind === 'secret' ? this.name : undefined;
  }
}
