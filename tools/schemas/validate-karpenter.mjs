#!/usr/bin/env node
// Offline schema validation of rendered Karpenter manifests.
//
// Usage:
//   node tools/schemas/validate-karpenter.mjs < manifests.json
//   node tools/schemas/validate-karpenter.mjs --version
//
// stdin:  a JSON array of manifests (a single JSON object is accepted too).
// stdout: a JSON array with one result per input manifest, in input order:
//           {index, apiVersion, kind, name, ok, errors: [string, ...]}
//         Each error starts with the field path, e.g.
//           "spec.weight: must be <= 100 (got 101)"
//           "spec.template.spec.foo: unknown field \"foo\" (...)"
// exit:   0 = every manifest valid, 1 = at least one invalid (results are
//         still printed), 2 = usage / input error (message on stderr).
//
// Kinds: karpenter.sh/v1 NodePool, karpenter.sh/v1 NodeClaim,
// karpenter.sh/v1alpha1 NodeOverlay, karpenter.k8s.aws/v1 EC2NodeClass. Any
// other apiVersion/kind is reported as an error, never passed.
//
// Schemas: @kubernetes-models/karpenter@2.0.0 (pinned exactly in package.json,
// transitive packages pinned by package-lock.json). Its models are generated
// from the Go API types of aws/karpenter-provider-aws v1.12.1 (pkg/apis/v1) and
// sigs.k8s.io/karpenter v1.12.0 (pkg/apis/v1, v1alpha1), and ship as
// AJV-compiled validators under `_schemas/` (JS modules, not JSON documents).
// hybridgpu renders for Karpenter v1.14.1, so the few v1.12 -> v1.14.1 CRD
// differences are patched in below (SCHEMA_GAPS, EXTRA_FIELDS).
//
// Three checks per manifest:
//  1. the package's own `new Model(obj).validate()` (types, enums, required
//     fields, min/max, patterns, formats);
//  2. a strict unknown-field check. The generated schemas contain no
//     `additionalProperties: false` anywhere, so the package alone accepts
//     `spec.template.spec.foo` or `spec.disruption.consolidateAftr`. As the
//     `_schemas/` validators are compiled code with no JSON left to walk, the
//     known properties are read off the validators themselves: the manifest is
//     validated once more through a Proxy that records every property the
//     compiled validator looks up on each object. A compiled validator looks up
//     every property its schema declares, and enumerates the keys of objects
//     that are maps (`additionalProperties: <schema>`: labels, limits, tags...).
//     So on every object that the validator visited and did not enumerate, an
//     own key it never looked up is a field the schema does not declare: an
//     unknown field (one the API server would prune, or reject with
//     `kubectl apply --validate=strict`). Verified against the v1.12.1 and
//     v1.14.1 CRD YAMLs: a manifest setting every property they declare gets
//     no unknown-field error (with EXTRA_FIELDS for v1.14.1);
//  3. EXTRA_FIELDS: fields added to the CRDs after v1.12.1, checked here.
//
// Not covered: CEL rules (x-kubernetes-validations) of the real CRDs, e.g.
// "exactly one of role / instanceProfile", restricted label domains in
// requirements, schedule <-> duration in budgets. Only the API server runs them.

import { readFileSync } from "node:fs";
import { NodePool } from "@kubernetes-models/karpenter/karpenter.sh/v1/NodePool";
import { NodeClaim } from "@kubernetes-models/karpenter/karpenter.sh/v1/NodeClaim";
import { NodeOverlay } from "@kubernetes-models/karpenter/karpenter.sh/v1alpha1/NodeOverlay";
import { EC2NodeClass } from "@kubernetes-models/karpenter/karpenter.k8s.aws/v1/EC2NodeClass";

const MODELS = [NodePool, NodeClaim, NodeOverlay, EC2NodeClass];
const gvk = (apiVersion, kind) => `${apiVersion} ${kind}`;
const MODEL_BY_GVK = new Map(MODELS.map((m) => [gvk(m.apiVersion, m.kind), m]));
const KNOWN = MODELS.map((m) => gvk(m.apiVersion, m.kind)).join(", ");

// Places where the package's generated schema rejects what the Karpenter
// v1.14.1 CRDs (aws/karpenter-provider-aws pkg/apis/crds/*.yaml at that tag)
// accept. An error matching one of these is dropped. Each entry is a false
// positive against the real API server; keep the list short.
const SCHEMA_GAPS = [
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
const EXTRA_FIELDS = {
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

function packageVersions() {
  const read = (rel) => {
    try {
      const url = new URL(`./node_modules/${rel}/package.json`, import.meta.url);
      return JSON.parse(readFileSync(url, "utf8")).version;
    } catch {
      return null;
    }
  };
  return {
    "@kubernetes-models/karpenter": read("@kubernetes-models/karpenter"),
    "@kubernetes-models/apimachinery": read("@kubernetes-models/apimachinery"),
    "@kubernetes-models/validate": read("@kubernetes-models/validate"),
    node: process.versions.node,
    kinds: MODELS.map((m) => gvk(m.apiVersion, m.kind)),
  };
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
function modelErrors(Model, manifest) {
  try {
    new Model(manifest).validate();
    return [];
  } catch (err) {
    if (!Array.isArray(err && err.errors)) {
      return [`validation crashed: ${err && err.message ? err.message : String(err)}`];
    }
    const real = err.errors.filter(
      (e) => !SCHEMA_GAPS.some((gap) => gap.matches(e, valueAt(manifest, pointerSegments(e.instancePath)))),
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
function extraFieldErrors(key, manifest) {
  const errors = [];
  for (const field of EXTRA_FIELDS[key] || []) {
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
        errors.push(`${where}.${k}: unknown field "${k}" (not in the Karpenter v1.14.1 CRD)`);
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

function validateOne(manifest, index) {
  if (!isPlainObject(manifest)) {
    return { index, apiVersion: null, kind: null, name: null, ok: false, errors: ["manifest is not a JSON object"] };
  }
  const apiVersion = typeof manifest.apiVersion === "string" ? manifest.apiVersion : null;
  const kind = typeof manifest.kind === "string" ? manifest.kind : null;
  const meta = manifest.metadata;
  const name = isPlainObject(meta) && typeof meta.name === "string" ? meta.name : null;
  const result = { index, apiVersion, kind, name, ok: false, errors: [] };
  if (apiVersion === null || kind === null) {
    result.errors.push("(root): manifest needs string apiVersion and kind");
    return result;
  }
  const key = gvk(apiVersion, kind);
  const Model = MODEL_BY_GVK.get(key);
  if (!Model) {
    result.errors.push(`(root): no schema for ${key} in @kubernetes-models/karpenter (known: ${KNOWN})`);
    return result;
  }
  const copy = structuredClone(manifest);
  const extra = extraFieldErrors(key, copy);
  result.errors = [...modelErrors(Model, copy), ...unknownFieldErrors(Model, copy), ...extra];
  result.ok = result.errors.length === 0;
  return result;
}

const USAGE = `usage: validate-karpenter.mjs < manifests.json
       validate-karpenter.mjs --version
Reads a JSON array of Karpenter manifests on stdin and prints a JSON array of
{index, apiVersion, kind, name, ok, errors} on stdout.
Exit status: 0 all valid, 1 some invalid, 2 bad usage or input.
`;

function main(argv) {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (argv.includes("--version")) {
    process.stdout.write(JSON.stringify(packageVersions()) + "\n");
    return 0;
  }
  if (argv.length > 0) {
    process.stderr.write(`validate-karpenter: unexpected arguments: ${argv.join(" ")}\n${USAGE}`);
    return 2;
  }
  let input;
  try {
    input = JSON.parse(readFileSync(0, "utf8"));
  } catch (err) {
    process.stderr.write(`validate-karpenter: stdin is not valid JSON: ${err.message}\n`);
    return 2;
  }
  const manifests = Array.isArray(input) ? input : [input];
  const results = manifests.map(validateOne);
  process.stdout.write(JSON.stringify(results) + "\n");
  return results.every((r) => r.ok) ? 0 : 1;
}

process.exitCode = main(process.argv.slice(2));
