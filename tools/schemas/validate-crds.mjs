#!/usr/bin/env node
// Offline schema validation of rendered CRD objects (Karpenter, Prometheus
// Operator).
//
// Usage:
//   node tools/schemas/validate-crds.mjs [--only FAMILY[,FAMILY]] < manifests.json
//   node tools/schemas/validate-crds.mjs --version
//
// FAMILY is `karpenter` or `prometheus-operator` (see FAMILIES below); with
// --only, a manifest of any other family is an error ("no schema for ...").
// `validate-karpenter.mjs` is this script with `--only karpenter`.
//
// stdin:  a JSON array of manifests (a single JSON object is accepted too).
// stdout: a JSON array with one result per input manifest, in input order:
//           {index, apiVersion, kind, name, ok, skipped, errors: [string, ...]}
//         Each error starts with the field path, e.g.
//           "spec.weight: must be <= 100 (got 101)"
//           "spec.template.spec.foo: unknown field \"foo\" (...)"
//         `skipped` is true (and `ok` false) for a kind of a validated API
//         group that this script deliberately does not check (e.g.
//         monitoring.coreos.com/v1 Prometheus); errors[0] then says why.
// exit:   0 = no manifest invalid (all valid or skipped), 1 = at least one
//         invalid (results are still printed), 2 = usage / input error
//         (message on stderr).
//
// Kinds (an apiVersion/kind not listed and not in `skip` of its family is an
// error, never passed):
//   karpenter            karpenter.sh/v1 NodePool, NodeClaim;
//                        karpenter.sh/v1alpha1 NodeOverlay;
//                        karpenter.k8s.aws/v1 EC2NodeClass
//   prometheus-operator  monitoring.coreos.com/v1 PrometheusRule,
//                        ServiceMonitor, PodMonitor, Probe
//                        (Prometheus, PrometheusAgent, Alertmanager,
//                        AlertmanagerConfig, ThanosRuler, ScrapeConfig: skipped)
//
// Schemas (pinned exactly in package.json, transitive packages pinned by
// package-lock.json; both ship AJV-compiled validators under `_schemas/`, JS
// modules, not JSON documents):
//  * @kubernetes-models/karpenter@2.0.0: generated from the Go API types of
//    aws/karpenter-provider-aws v1.12.1 (pkg/apis/v1) and sigs.k8s.io/karpenter
//    v1.12.0 (pkg/apis/v1, v1alpha1). hybridgpu renders for Karpenter v1.14.1,
//    so the few v1.12 -> v1.14.1 CRD differences are patched in below
//    (schemaGaps, extraFields).
//  * @kubernetes-models/prometheus-operator@6.0.0: generated from the Go API
//    types of prometheus-operator v0.91.0 (pkg/apis/monitoring v1, v1alpha1,
//    v1beta1; kubebuilder markers included: required, enums, patterns,
//    minLength...). The four validated CRDs gained no field from v0.91.0 to
//    v0.93.0 (newest release, 2026-07-28); v0.93.0 only added `minimum: 0` to
//    the scrape limits and relabeling `modulus`, and turned oauth2 `tokenUrl`
//    from minLength 1 into pattern ^(http|https)://.+$ : those are checked
//    below (extraChecks). The skipped kinds did gain fields in v0.92/v0.93
//    (e.g. Prometheus spec.tsdb.staleSeriesCompactionThreshold), so the v0.91.0
//    schemas would flag valid current objects: they are not validated.
//
// Per manifest:
//  1. the package's own `new Model(obj).validate()` (types, enums, required
//     fields, min/max, patterns, formats), minus family.schemaGaps;
//  2. a strict unknown-field check. The generated schemas contain no
//     `additionalProperties: false` anywhere, so the packages alone accept
//     `spec.template.spec.foo` or `spec.groups[0].rules[0].severity`. As the
//     `_schemas/` validators are compiled code with no JSON left to walk, the
//     known properties are read off the validators themselves: the manifest is
//     validated once more through a Proxy that records every property the
//     compiled validator looks up on each object. A compiled validator looks up
//     every property its schema declares, and enumerates the keys of objects
//     that are maps (`additionalProperties: <schema>`: labels, annotations,
//     limits, tags...). So on every object that the validator visited and did
//     not enumerate, an own key it never looked up is a field the schema does
//     not declare: an unknown field (one the API server would prune, or reject
//     with `kubectl apply --validate=strict`). Verified against the CRD YAMLs
//     (Karpenter v1.12.1 and v1.14.1; prometheus-operator v0.91.0 and v0.93.0
//     example/prometheus-operator-crd/): a manifest setting every property they
//     declare gets no unknown-field error (with extraFields for Karpenter
//     v1.14.1);
//  3. family.extraFields: fields added to the CRDs after the package's
//     version, checked here;
//  4. family.extraChecks: constraints the CRDs tightened after the package's
//     version.
//
// Not covered: CEL rules (x-kubernetes-validations) of the real CRDs, e.g.
// Karpenter's "exactly one of role / instanceProfile", restricted label
// domains in requirements, schedule <-> duration in budgets; and admission
// webhooks
// (the Prometheus Operator's webhook parses PromQL `expr`; here `expr` is only
// checked to be a string or integer). Only a real cluster runs them.

import { readFileSync, realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

const gvk = (apiVersion, kind) => `${apiVersion} ${kind}`;

// --------------------------------------------------------------- Karpenter

// Places where the package's generated schema rejects what the Karpenter
// v1.14.1 CRDs (aws/karpenter-provider-aws pkg/apis/crds/*.yaml at that tag)
// accept. An error matching one of these is dropped. Each entry is a false
// positive against the real API server; keep the list short.
const KARPENTER_SCHEMA_GAPS = [
  {
    // nodepools/nodeclaims CRDs (since v1.12) allow Gte and Lte; the package's
    // enum stops at Gt/Lt.
    matches: (err, value) =>
      err.keyword === "enum" &&
      /\/requirements\/\d+\/operator$/.test(err.instancePath) &&
      ["Gte", "Lte"].includes(value),
  },
  {
    // nodepools CRD v1.14: consolidationPolicy gained "Balanced".
    matches: (err, value) =>
      err.keyword === "enum" && err.instancePath === "/spec/disruption/consolidationPolicy" && value === "Balanced",
  },
];

// Fields the v1.14.1 CRDs declare that the v1.12-based package does not know.
// They are taken out of the manifest before checks 1-2 and checked here with
// the CRD's own constraints (unknown sub-fields are errors too).
const int32In = (min, max) => (v) =>
  !Number.isInteger(v) ? "must be integer" : v < min ? `must be >= ${min}` : v > max ? `must be <= ${max}` : null;
const oneOf = (...allowed) => (v) =>
  allowed.includes(v) ? null : `must be equal to one of the allowed values ${JSON.stringify(allowed)}`;
const KARPENTER_EXTRA_FIELDS = {
  [gvk("karpenter.k8s.aws/v1", "EC2NodeClass")]: [
    {
      path: ["spec", "connectionTracking"], // CRD v1.13.0+
      props: {
        tcpEstablishedTimeout: int32In(60, 432000),
        udpStreamTimeout: int32In(60, 180),
        udpTimeout: int32In(30, 60),
      },
      atLeastOne: true, // CEL rule of the CRD
    },
    {
      path: ["spec", "cpuOptions"], // CRD v1.13.0+
      props: { nestedVirtualization: oneOf("enabled", "disabled") },
    },
  ],
};

// ----------------------------------------------------- Prometheus Operator

// Constraints added by the prometheus-operator v0.93.0 CRDs (vs v0.91.0, the
// package's source). Paths use "*" for every item of an array. A value of the
// wrong type is left to check 1.
const nonNegative = (v) => (typeof v === "number" && v < 0 ? "must be >= 0" : null);
const HTTP_URL = /^(http|https):\/\/.+$/;
const httpUrl = (v) => (typeof v === "string" && !HTTP_URL.test(v) ? `must match pattern "${HTTP_URL.source}"` : null);
const SCRAPE_LIMITS = [
  "keepDroppedTargets",
  "labelLimit",
  "labelNameLengthLimit",
  "labelValueLengthLimit",
  "nativeHistogramBucketLimit",
  "sampleLimit",
  "targetLimit",
];
const endpointChecks = (endpoints) => [
  { path: ["spec", endpoints, "*", "metricRelabelings", "*", "modulus"], check: nonNegative },
  { path: ["spec", endpoints, "*", "relabelings", "*", "modulus"], check: nonNegative },
  { path: ["spec", endpoints, "*", "oauth2", "tokenUrl"], check: httpUrl },
];
const limitChecks = SCRAPE_LIMITS.map((name) => ({ path: ["spec", name], check: nonNegative }));
const PROMETHEUS_OPERATOR_EXTRA_CHECKS = {
  [gvk("monitoring.coreos.com/v1", "ServiceMonitor")]: [...limitChecks, ...endpointChecks("endpoints")],
  [gvk("monitoring.coreos.com/v1", "PodMonitor")]: [...limitChecks, ...endpointChecks("podMetricsEndpoints")],
  [gvk("monitoring.coreos.com/v1", "Probe")]: [
    ...limitChecks,
    { path: ["spec", "metricRelabelings", "*", "modulus"], check: nonNegative },
    { path: ["spec", "oauth2", "tokenUrl"], check: httpUrl },
    { path: ["spec", "targets", "ingress", "relabelingConfigs", "*", "modulus"], check: nonNegative },
    { path: ["spec", "targets", "staticConfig", "relabelingConfigs", "*", "modulus"], check: nonNegative },
  ],
};

const PROMETHEUS_OPERATOR_SKIP_REASON =
  "its CRD gained fields after prometheus-operator v0.91.0 (the schemas' source), so it is not validated offline; " +
  "validate it against its CRD on a cluster";

// ---------------------------------------------------------------- families

const FAMILIES = [
  {
    id: "karpenter",
    package: "@kubernetes-models/karpenter",
    groups: ["karpenter.sh", "karpenter.k8s.aws"],
    crd: "Karpenter v1.14.1",
    kinds: [
      ["karpenter.sh/v1", "NodePool"],
      ["karpenter.sh/v1", "NodeClaim"],
      ["karpenter.sh/v1alpha1", "NodeOverlay"],
      ["karpenter.k8s.aws/v1", "EC2NodeClass"],
    ],
    skip: [],
    schemaGaps: KARPENTER_SCHEMA_GAPS,
    extraFields: KARPENTER_EXTRA_FIELDS,
    extraChecks: {},
  },
  {
    id: "prometheus-operator",
    package: "@kubernetes-models/prometheus-operator",
    groups: ["monitoring.coreos.com"],
    crd: "prometheus-operator v0.93.0",
    kinds: [
      ["monitoring.coreos.com/v1", "PrometheusRule"],
      ["monitoring.coreos.com/v1", "ServiceMonitor"],
      ["monitoring.coreos.com/v1", "PodMonitor"],
      ["monitoring.coreos.com/v1", "Probe"],
    ],
    skip: [
      ["monitoring.coreos.com/v1", "Prometheus"],
      ["monitoring.coreos.com/v1", "Alertmanager"],
      ["monitoring.coreos.com/v1", "ThanosRuler"],
      ["monitoring.coreos.com/v1alpha1", "PrometheusAgent"],
      ["monitoring.coreos.com/v1alpha1", "ScrapeConfig"],
      ["monitoring.coreos.com/v1alpha1", "AlertmanagerConfig"],
      ["monitoring.coreos.com/v1beta1", "AlertmanagerConfig"],
    ],
    skipReason: PROMETHEUS_OPERATOR_SKIP_REASON,
    schemaGaps: [],
    extraFields: {},
    extraChecks: PROMETHEUS_OPERATOR_EXTRA_CHECKS,
  },
];
const FAMILY_IDS = FAMILIES.map((f) => f.id);

// Models are imported on first use, so validating only Karpenter objects does
// not need the prometheus-operator package (and vice versa).
const modelCache = new Map();
async function loadModel(family, apiVersion, kind) {
  const key = gvk(apiVersion, kind);
  if (!modelCache.has(key)) {
    const group = apiVersion.split("/")[0];
    const version = apiVersion.split("/")[1];
    const mod = await import(`${family.package}/${group}/${version}/${kind}`);
    modelCache.set(key, mod[kind]);
  }
  return modelCache.get(key);
}

function packageVersions(families) {
  const read = (rel) => {
    try {
      const url = new URL(`./node_modules/${rel}/package.json`, import.meta.url);
      return JSON.parse(readFileSync(url, "utf8")).version;
    } catch {
      return null;
    }
  };
  const versions = {};
  for (const family of families) versions[family.package] = read(family.package);
  versions["@kubernetes-models/apimachinery"] = read("@kubernetes-models/apimachinery");
  versions["@kubernetes-models/validate"] = read("@kubernetes-models/validate");
  versions.node = process.versions.node;
  versions.kinds = families.flatMap((f) => f.kinds.map(([a, k]) => gvk(a, k)));
  versions.skipped = families.flatMap((f) => f.skip.map(([a, k]) => gvk(a, k)));
  return versions;
}

const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

// Path segments -> "spec.template.spec.requirements[0].operator". Whether a
// numeric segment is an array index is decided by looking at the manifest;
// keys that are not plain identifiers are quoted (label keys, resource names).
function formatPath(root, segments) {
  let out = "";
  let cur = root;
  for (const seg of segments) {
    if (Array.isArray(cur) && /^\d+$/.test(seg)) {
      out += `[${seg}]`;
    } else if (/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(seg)) {
      out += out === "" ? seg : `.${seg}`;
    } else {
      out += `[${JSON.stringify(seg)}]`;
    }
    cur = cur != null && typeof cur === "object" ? cur[seg] : undefined;
  }
  return out === "" ? "(root)" : out;
}

function pointerSegments(pointer) {
  if (!pointer) return [];
  return pointer
    .split("/")
    .slice(1)
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function valueAt(root, segments) {
  let cur = root;
  for (const seg of segments) {
    if (cur == null || typeof cur !== "object") return undefined;
    cur = cur[seg];
  }
  return cur;
}

const SHOW_VALUE = new Set(["enum", "pattern", "maximum", "minimum", "type", "format", "maxLength", "minLength"]);

function formatAjvError(root, err) {
  const segs = pointerSegments(err.instancePath);
  if (err.keyword === "required" && err.params && err.params.missingProperty !== undefined) {
    return `${formatPath(root, [...segs, err.params.missingProperty])}: required field is missing`;
  }
  let msg = `${formatPath(root, segs)}: ${err.message}`;
  if (err.keyword === "enum" && err.params && Array.isArray(err.params.allowedValues)) {
    msg += ` ${JSON.stringify(err.params.allowedValues)}`;
  }
  if (SHOW_VALUE.has(err.keyword)) {
    const got = valueAt(root, segs);
    if (got !== undefined) msg += ` (got ${JSON.stringify(got)})`;
  }
  return msg;
}

// Check 1: the package's model validation.
function modelErrors(family, Model, manifest) {
  try {
    new Model(manifest).validate();
    return [];
  } catch (err) {
    if (!Array.isArray(err && err.errors)) {
      return [`validation crashed: ${err && err.message ? err.message : String(err)}`];
    }
    const real = err.errors.filter(
      (e) => !family.schemaGaps.some((gap) => gap.matches(e, valueAt(manifest, pointerSegments(e.instancePath)))),
    );
    return [...new Set(real.map((e) => formatAjvError(manifest, e)))];
  }
}

// Check 2: unknown fields, read off the compiled validator (see header).
function unknownFieldErrors(Model, manifest) {
  const records = new WeakMap(); // object -> {accessed: Set<string>, enumerated: boolean}
  const proxies = new WeakMap();
  const wrap = (value) => {
    if (value === null || typeof value !== "object") return value;
    const cached = proxies.get(value);
    if (cached) return cached;
    const rec = { accessed: new Set(), enumerated: false };
    records.set(value, rec);
    const proxy = new Proxy(value, {
      get(target, key, receiver) {
        const v = Reflect.get(target, key, receiver);
        if (typeof key !== "string") return v;
        rec.accessed.add(key);
        return Object.prototype.hasOwnProperty.call(target, key) ? wrap(v) : v;
      },
      has(target, key) {
        if (typeof key === "string") rec.accessed.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        rec.enumerated = true;
        return Reflect.ownKeys(target);
      },
    });
    proxies.set(value, proxy);
    return proxy;
  };

  try {
    // The same compiled validate function as check 1, bound to the
    // instrumented object (apiVersion/kind already match the model, so this is
    // what the model copy would hold). Its verdict is check 1's business.
    Model.prototype.validate.call(wrap(manifest));
  } catch {
    /* reported by check 1 */
  }

  const errors = [];
  const walk = (value, segs) => {
    if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, [...segs, String(i)]));
      return;
    }
    if (!isPlainObject(value)) return;
    const rec = records.get(value);
    if (!rec) return; // the validator never reached it: inside a free-form field
    if (rec.enumerated) {
      // A map (labels, limits, tags, ...): any key is allowed, values were validated.
      for (const [k, v] of Object.entries(value)) walk(v, [...segs, k]);
      return;
    }
    for (const [k, v] of Object.entries(value)) {
      if (rec.accessed.has(k)) {
        walk(v, [...segs, k]);
      } else {
        const where = formatPath(manifest, [...segs, k]);
        errors.push(`${where}: unknown field "${k}" (not in the ${gvk(Model.apiVersion, Model.kind)} schema)`);
      }
    }
  };
  walk(manifest, []);
  return errors;
}

// Check 3: fields newer than the package, removed from `manifest` in place
// (call it on a copy).
function extraFieldErrors(family, key, manifest) {
  const errors = [];
  for (const field of family.extraFields[key] || []) {
    const parent = valueAt(manifest, field.path.slice(0, -1));
    const name = field.path[field.path.length - 1];
    if (!isPlainObject(parent) || !(name in parent)) continue;
    const value = parent[name];
    delete parent[name];
    const where = field.path.join(".");
    if (value === null) continue; // null == unset for an optional field
    if (!isPlainObject(value)) {
      errors.push(`${where}: must be object (got ${JSON.stringify(value)})`);
      continue;
    }
    for (const [k, v] of Object.entries(value)) {
      if (!(k in field.props)) {
        errors.push(`${where}.${k}: unknown field "${k}" (not in the ${family.crd} CRD)`);
        continue;
      }
      const problem = field.props[k](v);
      if (problem) errors.push(`${where}.${k}: ${problem} (got ${JSON.stringify(v)})`);
    }
    if (field.atLeastOne && !Object.keys(field.props).some((k) => k in value)) {
      errors.push(`${where}: at least one of ${Object.keys(field.props).join(", ")} must be set`);
    }
  }
  return errors;
}

// Check 4: constraints newer than the package ("*" = every array item).
function extraCheckErrors(family, key, manifest) {
  const errors = [];
  const visit = (value, rest, segs, check) => {
    if (rest.length === 0) {
      const problem = value === undefined || value === null ? null : check(value);
      if (problem) errors.push(`${formatPath(manifest, segs)}: ${problem} (got ${JSON.stringify(value)}; ${family.crd} CRD)`);
      return;
    }
    const [head, ...tail] = rest;
    if (head === "*") {
      if (Array.isArray(value)) value.forEach((item, i) => visit(item, tail, [...segs, String(i)], check));
    } else if (isPlainObject(value) && Object.prototype.hasOwnProperty.call(value, head)) {
      visit(value[head], tail, [...segs, head], check);
    }
  };
  for (const { path, check } of family.extraChecks[key] || []) visit(manifest, path, [], check);
  return errors;
}

async function validateOne(manifest, index, families) {
  if (!isPlainObject(manifest)) {
    return {
      index,
      apiVersion: null,
      kind: null,
      name: null,
      ok: false,
      skipped: false,
      errors: ["manifest is not a JSON object"],
    };
  }
  const apiVersion = typeof manifest.apiVersion === "string" ? manifest.apiVersion : null;
  const kind = typeof manifest.kind === "string" ? manifest.kind : null;
  const meta = manifest.metadata;
  const name = isPlainObject(meta) && typeof meta.name === "string" ? meta.name : null;
  const result = { index, apiVersion, kind, name, ok: false, skipped: false, errors: [] };
  if (apiVersion === null || kind === null) {
    result.errors.push("(root): manifest needs string apiVersion and kind");
    return result;
  }
  const key = gvk(apiVersion, kind);
  const group = apiVersion.includes("/") ? apiVersion.split("/")[0] : "";
  const family = families.find((f) => f.groups.includes(group));
  if (!family) {
    const groups = families.flatMap((f) => f.groups).join(", ");
    result.errors.push(`(root): no schema for ${key} (API groups validated here: ${groups})`);
    return result;
  }
  if (family.skip.some(([a, k]) => gvk(a, k) === key)) {
    result.skipped = true;
    result.errors.push(`skipped: ${key}: ${family.skipReason}`);
    return result;
  }
  if (!family.kinds.some(([a, k]) => gvk(a, k) === key)) {
    const known = family.kinds.map(([a, k]) => gvk(a, k)).join(", ");
    result.errors.push(`(root): no schema for ${key} in ${family.package} (known: ${known})`);
    return result;
  }
  const Model = await loadModel(family, apiVersion, kind);
  const copy = structuredClone(manifest);
  const extra = extraFieldErrors(family, key, copy);
  result.errors = [
    ...modelErrors(family, Model, copy),
    ...unknownFieldErrors(Model, copy),
    ...extra,
    ...extraCheckErrors(family, key, copy),
  ];
  result.ok = result.errors.length === 0;
  return result;
}

const usage = (prog, only) => `usage: ${prog} [--only FAMILY[,FAMILY]] < manifests.json
       ${prog} --version
Reads a JSON array of manifests on stdin and prints a JSON array of
{index, apiVersion, kind, name, ok, skipped, errors} on stdout.
FAMILY: ${only.join(", ")} (default: all of them).
Exit status: 0 none invalid, 1 some invalid, 2 bad usage or input.
`;

/**
 * Runs the command line; returns the exit status.
 * @param {string[]} argv arguments after the script name
 * @param {{prog?: string, only?: string[]}} options `only` restricts the
 *   families (as --only does, which cannot widen it).
 */
export async function main(argv, { prog = "validate-crds.mjs", only = FAMILY_IDS } = {}) {
  const args = [...argv];
  let selected = only;
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(usage(prog, only));
    return 0;
  }
  if (args.includes("--version")) {
    process.stdout.write(JSON.stringify(packageVersions(FAMILIES.filter((f) => only.includes(f.id)))) + "\n");
    return 0;
  }
  const at = args.indexOf("--only");
  if (at !== -1) {
    const wanted = (args[at + 1] || "").split(",").filter(Boolean);
    const bad = wanted.filter((id) => !only.includes(id));
    if (wanted.length === 0 || bad.length > 0) {
      process.stderr.write(`${prog}: --only takes one or more of ${only.join(", ")}\n${usage(prog, only)}`);
      return 2;
    }
    selected = wanted;
    args.splice(at, 2);
  }
  if (args.length > 0) {
    process.stderr.write(`${prog}: unexpected arguments: ${args.join(" ")}\n${usage(prog, only)}`);
    return 2;
  }
  let input;
  try {
    input = JSON.parse(readFileSync(0, "utf8"));
  } catch (err) {
    process.stderr.write(`${prog}: stdin is not valid JSON: ${err.message}\n`);
    return 2;
  }
  const families = FAMILIES.filter((f) => selected.includes(f.id));
  const manifests = Array.isArray(input) ? input : [input];
  const results = [];
  for (const [index, manifest] of manifests.entries()) results.push(await validateOne(manifest, index, families));
  process.stdout.write(JSON.stringify(results) + "\n");
  return results.every((r) => r.ok || r.skipped) ? 0 : 1;
}

const isEntryPoint = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
})();
if (isEntryPoint) process.exitCode = await main(process.argv.slice(2));
