// Verification of an accords-mcp receipt proof from the specifications
// alone (RFC 6962 inclusion proofs, C2SP signed-note, tlog-checkpoint and
// tlog-proof), with node:crypto: nothing of the server's code is trusted.
import { createHash, createPublicKey, verify as verifySignature, type KeyObject } from 'node:crypto';

/** A C2SP signed-note verifier key: name+hash+base64(0x01 || Ed25519 key). */
export interface VerifierKey {
	name: string;
	keyHash: Buffer;
	key: KeyObject;
}

/** A checkpoint whose signature verified. */
export interface Checkpoint {
	origin: string;
	size: bigint;
	root: Buffer;
	text: string;
}

/** A receipt proven in a signed checkpoint. */
export interface ProvenReceipt {
	receipt: Record<string, unknown>;
	receiptBytes: string;
	leafIndex: bigint;
	leafHash: string;
	checkpoint: Checkpoint;
}

const sha256 = (...parts: Buffer[]): Buffer => {
	const h = createHash('sha256');
	for (const p of parts) h.update(p);
	return h.digest();
};

const strictBase64 = (s: string, what: string): Buffer => {
	const b = Buffer.from(s, 'base64');
	if (b.toString('base64') !== s) throw new Error(`${what} is not canonical base64`);
	return b;
};

/** parseVerifierKey reads the output of `accords-mcp audit key`. */
export function parseVerifierKey(vkey: string): VerifierKey {
	// The name holds no '+'; the base64 key may.
	const m = /^([^+\s]+)\+([0-9a-f]{8})\+(\S+)$/.exec(vkey.trim());
	if (!m) {
		throw new Error('the audit key must be name+hash+base64 (the output of accords-mcp audit key)');
	}
	const [, name, hashHex, b64] = m;
	const raw = strictBase64(b64, 'the audit key');
	if (raw.length !== 33 || raw[0] !== 0x01) throw new Error('the audit key is not an Ed25519 signed-note key');
	const keyHash = Buffer.from(hashHex, 'hex');
	const want = sha256(Buffer.from(`${name}\n`, 'utf8'), raw).subarray(0, 4);
	if (!keyHash.equals(want)) throw new Error("the audit key's hash does not match its name and key");
	const key = createPublicKey({
		key: { kty: 'OKP', crv: 'Ed25519', x: raw.subarray(1).toString('base64url') },
		format: 'jwk',
	});
	return { name, keyHash, key };
}

/**
 * openCheckpoint verifies a signed note under vk (one signature line of
 * vk's name and key hash must verify) and parses its C2SP checkpoint body:
 * origin, decimal tree size, base64 root hash.
 */
export function openCheckpoint(note: string, vk: VerifierKey): Checkpoint {
	const split = note.lastIndexOf('\n\n');
	if (split < 0) throw new Error('the checkpoint is not a signed note');
	const text = note.slice(0, split + 1);
	const sigs = note.slice(split + 2).split('\n').filter((l) => l !== '');
	let verified = false;
	for (const line of sigs) {
		const m = /^\u2014 (\S+) (\S+)$/.exec(line);
		if (!m) throw new Error('malformed signature line in the checkpoint');
		if (m[1] !== vk.name) continue;
		const sig = strictBase64(m[2], 'a checkpoint signature');
		if (sig.length !== 4 + 64 || !sig.subarray(0, 4).equals(vk.keyHash)) continue;
		if (verifySignature(null, Buffer.from(text, 'utf8'), vk.key, sig.subarray(4))) verified = true;
	}
	if (!verified) throw new Error(`the checkpoint is not signed by ${vk.name}`);
	const lines = text.split('\n');
	if (lines.length < 4 || lines[0] === '' || !/^(0|[1-9][0-9]*)$/.test(lines[1])) {
		throw new Error('the checkpoint body is not origin, size, root');
	}
	const root = strictBase64(lines[2], 'the checkpoint root');
	if (root.length !== 32) throw new Error('the checkpoint root is not a SHA-256 hash');
	return { origin: lines[0], size: BigInt(lines[1]), root, text: note };
}

/** leafHash is RFC 6962's leaf hash, SHA-256(0x00 || data). */
export const leafHash = (data: Buffer): Buffer => sha256(Buffer.from([0]), data);

const nodeHash = (l: Buffer, r: Buffer): Buffer => sha256(Buffer.from([1]), l, r);

/**
 * verifyInclusion checks an RFC 6962 audit path (leaf to root) of leaf
 * index in a tree of size with root, as RFC 9162 section 2.1.3.2 states it.
 */
export function verifyInclusion(index: bigint, size: bigint, leaf: Buffer, path: Buffer[], root: Buffer): boolean {
	if (index >= size) return false;
	let fn = index;
	let sn = size - 1n;
	let r = leaf;
	for (const p of path) {
		if (sn === 0n) return false;
		if ((fn & 1n) === 1n || fn === sn) {
			r = nodeHash(p, r);
			if ((fn & 1n) === 0n) {
				while ((fn & 1n) === 0n && fn !== 0n) {
					fn >>= 1n;
					sn >>= 1n;
				}
			}
		} else {
			r = nodeHash(r, p);
		}
		fn >>= 1n;
		sn >>= 1n;
	}
	return sn === 0n && r.equals(root);
}

/**
 * verifyTlogProof checks a C2SP tlog-proof (header, the receipt as extra
 * data, index, audit path, blank line, signed checkpoint) under vk and
 * returns the proven receipt. The receipt's seq must be its leaf index + 1.
 */
export function verifyTlogProof(proof: string, vk: VerifierKey): ProvenReceipt {
	const blank = proof.indexOf('\n\n');
	if (blank < 0) throw new Error('the tlog-proof has no checkpoint');
	const head = proof.slice(0, blank).split('\n');
	if (head[0] !== 'c2sp.org/tlog-proof@v1') throw new Error('not a c2sp.org/tlog-proof@v1 proof');
	let i = 1;
	if (!head[i]?.startsWith('extra ')) throw new Error('the tlog-proof carries no receipt (extra data)');
	const extra = strictBase64(head[i].slice('extra '.length), 'the extra data');
	i++;
	const idx = /^index (0|[1-9][0-9]*)$/.exec(head[i] ?? '');
	if (!idx) throw new Error('the tlog-proof has no index');
	const leafIndex = BigInt(idx[1]);
	const path = head.slice(i + 1).map((h) => {
		const b = strictBase64(h, 'a proof hash');
		if (b.length !== 32) throw new Error('a proof hash is not a SHA-256 hash');
		return b;
	});
	const checkpoint = openCheckpoint(proof.slice(blank + 2), vk);
	const leaf = leafHash(extra);
	if (!verifyInclusion(leafIndex, checkpoint.size, leaf, path, checkpoint.root)) {
		throw new Error(`the inclusion proof of leaf ${leafIndex} does not lead to the signed root of tree ${checkpoint.size}`);
	}
	const receiptBytes = extra.toString('utf8');
	const receipt = JSON.parse(receiptBytes) as Record<string, unknown>;
	if (typeof receipt.seq !== 'number' || BigInt(receipt.seq) !== leafIndex + 1n) {
		throw new Error("the receipt's seq is not its leaf index + 1");
	}
	return { receipt, receiptBytes, leafIndex, leafHash: leaf.toString('hex'), checkpoint };
}
