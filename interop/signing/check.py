#!/usr/bin/env python3
"""Agent Card signing cross-check with the official A2A Python SDK (a2a-sdk, `a2a.utils.signing`).

Needs PyJWT with cryptography (pinned in interop/python/requirements.txt). Run it with the
interop venv: `interop/.venv/bin/python interop/signing/check.py ...`.

  check.py sign [--alg ES256|RS256] [--kid KID] [--card FILE|-]
      Signs a card with the SDK's signer (`create_agent_card_signer`) using a freshly generated
      key and prints one JSON object:
        {"card": <signed card, ProtoJSON>, "jwks": {"keys": [<public JWK>]},
         "canonical": <the SDK's canonical payload, a string>}
      The card is read from FILE (or stdin with `-`) as ProtoJSON; without --card a built-in
      sample card is signed.

  check.py verify
      Reads {"card": <ProtoJSON card with signatures>, "jwks": {"keys": [...]}} from stdin and
      verifies it with the SDK's verifier (`create_signature_verifier`, algorithms ES256 and
      RS256; keys looked up by `kid`). Prints
        {"ok": true|false, "error": <message or null>, "canonical": <the SDK's canonical payload>}
      and exits 0 either way (1 only on bad input).

  check.py canonical
      Reads a ProtoJSON card from stdin and prints the SDK's canonical payload (no signing).
"""

from __future__ import annotations

import argparse
import json
import sys

from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from google.protobuf.json_format import MessageToDict, ParseDict
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from jwt.api_jwk import PyJWK
from jwt.exceptions import PyJWKError

from a2a.types import AgentCard
from a2a.utils import signing
from a2a.utils.signing import (
    SignatureVerificationError,
    create_agent_card_signer,
    create_signature_verifier,
)

SAMPLE_CARD: dict[str, Any] = {
    'name': 'Python-signed Agent',
    'description': 'Signed by the official SDK — ünïcödé',
    'version': '1.0.0',
    'supportedInterfaces': [
        {
            'url': 'http://127.0.0.1:9/a2a',
            'protocolBinding': 'JSONRPC',
            'protocolVersion': '1.0',
        }
    ],
    'capabilities': {'streaming': True, 'pushNotifications': False},
    'defaultInputModes': ['text/plain'],
    'defaultOutputModes': ['text/plain'],
    'skills': [
        {
            'id': 'echo',
            'name': 'Echo',
            'description': 'Echoes',
            'tags': ['echo'],
        }
    ],
}


def _parse_card(obj: dict[str, Any]) -> AgentCard:
    card = AgentCard()
    ParseDict(obj, card, ignore_unknown_fields=True)
    return card


def _canonical(card: AgentCard) -> str:
    # The SDK's own canonicalization (MessageToDict, drop signatures, drop empty values, JCS).
    return signing._canonicalize_agent_card(card)  # noqa: SLF001


def _generate(alg: str, kid: str) -> tuple[bytes, dict[str, Any]]:
    if alg == 'ES256':
        private = ec.generate_private_key(ec.SECP256R1())
        jwk = ECAlgorithm.to_jwk(private.public_key(), as_dict=True)
    elif alg == 'RS256':
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = RSAAlgorithm.to_jwk(private.public_key(), as_dict=True)
    else:
        raise SystemExit(f'unsupported --alg {alg}')
    jwk.update({'kid': kid, 'alg': alg, 'use': 'sig'})
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return pem, jwk


def cmd_sign(args: argparse.Namespace) -> int:
    if args.card is None:
        card_obj = SAMPLE_CARD
    elif args.card == '-':
        card_obj = json.load(sys.stdin)
    else:
        with open(args.card, encoding='utf-8') as f:
            card_obj = json.load(f)
    card = _parse_card(card_obj)
    pem, jwk = _generate(args.alg, args.kid)
    signer = create_agent_card_signer(
        signing_key=pem,
        protected_header={
            'kid': args.kid,
            'alg': args.alg,
            'jku': None,
            'typ': 'JOSE',
        },
    )
    signed = signer(card)
    out = {
        'card': MessageToDict(signed),
        'jwks': {'keys': [jwk]},
        'canonical': _canonical(signed),
    }
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write('\n')
    return 0


def cmd_verify(_args: argparse.Namespace) -> int:
    doc = json.load(sys.stdin)
    card = _parse_card(doc['card'])
    keys = {k.get('kid'): k for k in doc['jwks'].get('keys', [])}

    def key_provider(kid: str | None, _jku: str | None) -> PyJWK:
        if kid not in keys:
            raise PyJWKError(f'unknown kid {kid!r}')
        return PyJWK(keys[kid])

    verifier = create_signature_verifier(key_provider, ['ES256', 'RS256'])
    error = None
    try:
        verifier(card)
    except SignatureVerificationError as e:
        error = f'{type(e).__name__}: {e}'
    try:
        canonical = _canonical(card)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        canonical = None
        error = error or f'canonicalization failed: {e}'
    json.dump(
        {'ok': error is None, 'error': error, 'canonical': canonical},
        sys.stdout,
        ensure_ascii=False,
    )
    sys.stdout.write('\n')
    return 0


def cmd_canonical(_args: argparse.Namespace) -> int:
    card = _parse_card(json.load(sys.stdin))
    sys.stdout.write(_canonical(card) + '\n')
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='cmd', required=True)
    sign = sub.add_parser('sign', help='sign a card with the SDK')
    sign.add_argument('--alg', default='ES256', choices=['ES256', 'RS256'])
    sign.add_argument('--kid', default='python-key-1')
    sign.add_argument('--card', default=None, help='ProtoJSON card file, or - for stdin')
    sign.set_defaults(func=cmd_sign)
    verify = sub.add_parser('verify', help='verify a card+JWKS from stdin with the SDK')
    verify.set_defaults(func=cmd_verify)
    canonical = sub.add_parser('canonical', help="print the SDK's canonical payload")
    canonical.set_defaults(func=cmd_canonical)
    args = parser.parse_args()
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
