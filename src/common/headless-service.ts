import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { KIND, ManifestObject } from './manifest-object';

export interface HeadlessServiceOptions {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly selector: Record<string, string>;
  readonly ports: k8s.ServicePort[];
}

/**
 * The governing Service of a StatefulSet: it gives each pod the stable DNS name
 * `<pod>.<service>.<namespace>.svc.<domain>`. `publishNotReadyAddresses` publishes those names
 * before the pods are Ready, so peers can find each other during start-up (rendezvous, sharding).
 */
export function headlessService(scope: Construct, id: string, o: HeadlessServiceOptions): ApiObject {
  return new ManifestObject(scope, id, KIND.Service, {
    metadata: { name: o.name, labels: o.labels },
    spec: {
      clusterIp: 'None',
      publishNotReadyAddresses: true,
      selector: o.selector,
      ports: o.ports,
    },
  });
}
