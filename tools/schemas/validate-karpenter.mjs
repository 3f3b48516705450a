#!/usr/bin/env node
// Offline schema validation of rendered Karpenter manifests: the same as
//   node tools/schemas/validate-crds.mjs --only karpenter
// kept for existing callers. Any apiVersion/kind other than karpenter.sh/v1
// NodePool|NodeClaim, karpenter.sh/v1alpha1 NodeOverlay and
// karpenter.k8s.aws/v1 EC2NodeClass is reported as an error, never passed.
// Input, output, exit status and the checks are described in validate-crds.mjs.
//
// Usage:
//   node tools/schemas/validate-karpenter.mjs < manifests.json
//   node tools/schemas/validate-karpenter.mjs --version

import { main } from "./validate-crds.mjs";

process.exitCode = await main(process.argv.slice(2), { prog: "validate-karpenter.mjs", only: ["karpenter"] });
