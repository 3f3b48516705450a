"""Third-party security checks of what the toolkit generates (issue 8).

Pure helpers, no Pulumi import at module level; the checkers themselves are other people's
tools, imported or run lazily:

* :mod:`hybridgpu.security.iam_lint`: every IAM policy document the program registers (and
  the renderer's documents), linted with Duo Labs' ``parliament``; the findings that stay are
  justified next to the statement in :data:`hybridgpu.render.iam.PARLIAMENT_JUSTIFICATIONS`.
* :mod:`hybridgpu.security.checkov_scan`: Bridgecrew's ``checkov`` Kubernetes checks over
  rendered manifests and example workloads, with the documented skips of
  ``tools/security/checkov-skips.yaml``.
* :mod:`hybridgpu.security.scripts`: every shell script the program hands to a host
  (``command:remote:Command`` ``create``/``update``/``delete`` and ``stdin`` scripts), for
  ``shellcheck``.
* :mod:`hybridgpu.security.secrets_scan`: a scanner for secret material (bootstrap tokens,
  certificate keys, kubeconfig credentials, service-account tokens, private keys, AWS keys).

``python -m hybridgpu.security`` prints the figures of docs/security.md.
"""
