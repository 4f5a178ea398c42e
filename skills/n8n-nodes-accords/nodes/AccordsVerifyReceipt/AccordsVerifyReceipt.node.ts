import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeApiError, NodeConnectionTypes, NodeOperationError, sleep } from 'n8n-workflow';

import { callTool, toolError } from '../shared/bridge';
import { parseVerifierKey, verifyTlogProof } from '../shared/tlog';

const tool = 'vaultclaw_receipt_prove';

export class AccordsVerifyReceipt implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Accords Verify Receipt',
		name: 'accordsVerifyReceipt',
		icon: { light: 'file:../shared/accords.svg', dark: 'file:../shared/accords.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{"receipt " + $parameter["seq"]}}',
		description:
			'Fetch a receipt with its inclusion proof and check it against the published audit key (RFC 6962, signed checkpoint)',
		defaults: { name: 'Accords Verify Receipt' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'accordsApi', required: true }],
		properties: [
			{
				displayName: 'Sequence Number',
				name: 'seq',
				type: 'number',
				default: 0,
				description:
					'The receipt to verify: an expression reading the seq output of an Accords Receipt node (0: use the call ID)',
			},
			{
				displayName: 'Call ID',
				name: 'callId',
				type: 'string',
				default: '={{ $json.call_id }}',
				description: 'The call ID of the receipt, checked against the proven receipt',
			},
			{
				displayName: 'Audit Log Key',
				name: 'auditKey',
				type: 'string',
				default: '',
				description:
					'The published audit key (accords-mcp audit key); empty: the one of the credentials, else the one the bridge serves',
			},
			{
				displayName: 'Wait for Checkpoint (Seconds)',
				name: 'waitSeconds',
				type: 'number',
				default: 60,
				description: 'How long to wait for a signed checkpoint that covers a new receipt',
			},
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const out: INodeExecutionData[] = [];
		for (let i = 0; i < items.length; i++) {
			try {
				const seq = Number(this.getNodeParameter('seq', i, 0) ?? 0);
				const callId = String(this.getNodeParameter('callId', i, '') ?? '').trim();
				if (!(seq > 0) && callId === '') {
					throw new NodeOperationError(this.getNode(), 'Name the receipt by sequence number or call ID', {
						itemIndex: i,
					});
				}
				const { vkey, keySource } = await auditKey(this, i);
				let vk;
				try {
					vk = parseVerifierKey(vkey);
				} catch (e) {
					throw new NodeOperationError(this.getNode(), `${(e as Error).message}; the ${keySource}'s key is ${JSON.stringify(vkey)}`, {
						itemIndex: i,
					});
				}
				const args: IDataObject = seq > 0 ? { seq } : { call_id: callId };
				const deadline = Date.now() + 1000 * Number(this.getNodeParameter('waitSeconds', i, 60));
				let data: IDataObject | undefined;
				for (;;) {
					const { envelope } = await callTool(this, i, tool, args);
					if (envelope.ok) {
						data = envelope.data ?? {};
						break;
					}
					const notYet = envelope.error?.retryable && envelope.error.details?.reason === 'not_yet_signed';
					if (!notYet || Date.now() >= deadline) throw toolError(this, i, tool, envelope);
					await sleep(1000);
				}
				const proven = verifyTlogProof(String(data.tlog_proof ?? ''), vk);
				if (seq > 0 && Number(proven.leafIndex) + 1 !== seq) {
					throw new NodeOperationError(this.getNode(), `the proof is of receipt ${proven.leafIndex + 1n}, not ${seq}`, {
						itemIndex: i,
					});
				}
				if (callId !== '' && proven.receipt.call_id !== callId) {
					throw new NodeOperationError(this.getNode(), `the proven receipt is not the one of call ${callId}`, {
						itemIndex: i,
					});
				}
				out.push({
					json: {
						verified: true,
						seq: Number(proven.leafIndex + 1n),
						call_id: proven.receipt.call_id as string,
						leaf_hash: proven.leafHash,
						tree_size: Number(proven.checkpoint.size),
						root: proven.checkpoint.root.toString('base64'),
						origin: proven.checkpoint.origin,
						key_name: vk.name,
						key_source: keySource,
						receipt: proven.receipt as IDataObject,
						checkpoint: proven.checkpoint.text,
					},
					pairedItem: { item: i },
				});
			} catch (error) {
				if (this.continueOnFail()) {
					out.push({ json: { verified: false, error: (error as Error).message }, pairedItem: { item: i } });
					continue;
				}
				throw error instanceof NodeOperationError || error instanceof NodeApiError
					? error
					: new NodeOperationError(this.getNode(), error as Error, { itemIndex: i });
			}
		}
		return [out];
	}
}

// auditKey is the key to verify under: the node's, the credentials', or
// (weakest: the server vouches for itself) the one the bridge publishes.
async function auditKey(ctx: IExecuteFunctions, i: number): Promise<{ vkey: string; keySource: string }> {
	const own = String(ctx.getNodeParameter('auditKey', i, '') ?? '').trim();
	if (own !== '') return { vkey: own, keySource: 'node' };
	const creds = await ctx.getCredentials('accordsApi', i);
	const fromCreds = String(creds.auditKey ?? '').trim();
	if (fromCreds !== '') return { vkey: fromCreds, keySource: 'credentials' };
	const url = new URL('/.well-known/accords-audit-key', String(creds.bridgeUrl)).toString();
	const served = (await ctx.helpers.httpRequest({ method: 'GET', url, json: false })) as string;
	return { vkey: String(served).trim(), keySource: 'bridge' };
}
