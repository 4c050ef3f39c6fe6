/**
 * Signed JWTs on `jose`: keys imported once and pinned to one algorithm each,
 * `kid` rotation, a JWKS of the public keys, and a verifier that requires
 * `typ`, `iss`, one exact `aud`, `sub`, `jti`, `iat` and `exp`; and DPoP
 * proof verification (RFC 9449) with stateless server nonces.
 *
 * @module portcullis/jwt
 */
export {
  type DpopFailureReason,
  DpopNonceRequiredError,
  DpopProofInvalidError,
  type JwtFailureReason,
  JwtInvalidError,
} from "../core/errors.ts";
export { type DpopNonces, type DpopNoncesOptions, dpopNonces } from "./dpop-nonce.ts";
export {
  DPOP_PROOF_TYPE,
  type DpopAlgorithm,
  type DpopProofExpectation,
  type DpopProofVerifier,
  type DpopProofVerifierOptions,
  dpopAlgorithms,
  dpopProofVerifier,
  MAX_DPOP_PROOF_BYTES,
  type VerifiedDpopProof,
} from "./dpop-proof.ts";
export {
  type AsymmetricAlgorithm,
  type AsymmetricKeyInput,
  generateKeySet,
  type ImportedKey,
  importKeySet,
  type JsonWebKeySet,
  type JwtAlgorithm,
  type KeyInput,
  type KeyMaterial,
  KeySet,
  type KeySetOptions,
  type SymmetricAlgorithm,
  type SymmetricKeyInput,
} from "./keys.ts";
export {
  type JwtSigner,
  type JwtSignerOptions,
  jwtSigner,
  REGISTERED_CLAIMS,
  type SignedJwt,
  type SignInput,
} from "./sign.ts";
export {
  type JwtClaims,
  type JwtVerifier,
  type JwtVerifierOptions,
  jwtVerifier,
  MAX_CLOCK_TOLERANCE_SECONDS,
  type VerifiedJwt,
} from "./verify.ts";
