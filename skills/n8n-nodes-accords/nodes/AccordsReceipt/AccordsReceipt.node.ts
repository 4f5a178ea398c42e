import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeApiError, NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';

import { callTool, toolError } from '../shared/bridge';

const tool = 'vaultclaw_receipt_emit';

export class AccordsReceipt implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Accords Receipt',
		name: 'accordsReceipt',
		icon: { light: 'file:../shared/accords.svg', dark: 'file:../shared/accords.dark.svg' },
		group: ['output'],
		version: 1,
		subtitle: '={{$parameter["receiptType"]}}',
		description: 'Emit a receipt into the signed accords-mcp audit log',
		defaults: { name: 'Accords Receipt' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'accordsApi', required: true }],
		properties: [
			{
				displayName: 'Scroll',
				name: 'scroll',
				type: 'options',
				options: [
					{ name: 'Automation', value: 'automation' },
					{ name: 'Compliance', value: 'compliance' },
					{ name: 'Finance', value: 'finance' },
					{ name: 'Operations', value: 'operations' },
					{ name: 'Security', value: 'security' },
				],
				default: 'automation',
				description: 'The scroll (stream of receipts) this one belongs to',
			},
			{
				displayName: 'Receipt Type',
				name: 'receiptType',
				type: 'string',
				default: '',
				required: true,
				placeholder: 'invoice.approved',
				description: 'What happened, as a short type name',
			},
			{
				displayName: 'Body',
				name: 'body',
				type: 'json',
				default: '{}',
				description: 'The event as a JSON object; the receipt keeps its digest (and the body itself when the server logs parameters)',
			},
			{
				displayName: 'Tags',
				name: 'tags',
				type: 'string',
				default: '',
				placeholder: 'n8n, invoices',
				description: 'Comma-separated tags',
			},
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const out: INodeExecutionData[] = [];
		for (let i = 0; i < items.length; i++) {
			try {
				const type = (this.getNodeParameter('receiptType', i) as string).trim();
				if (type === '') throw new NodeOperationError(this.getNode(), 'Receipt Type is required', { itemIndex: i });
				const scroll = this.getNodeParameter('scroll', i) as string;
				const rawBody = this.getNodeParameter('body', i) as unknown;
				let body: unknown = rawBody;
				if (typeof rawBody === 'string') {
					try {
						body = JSON.parse(rawBody === '' ? '{}' : rawBody);
					} catch {
						throw new NodeOperationError(this.getNode(), 'Body is not valid JSON', { itemIndex: i });
					}
				}
				const tags = (this.getNodeParameter('tags', i) as string)
					.split(',')
					.map((t) => t.trim())
					.filter((t) => t !== '');
				const args: IDataObject = { type, body: body as IDataObject, scroll };
				if (tags.length > 0) args.tags = tags;
				const { envelope, callId } = await callTool(this, i, tool, args);
				if (!envelope.ok) throw toolError(this, i, tool, envelope);
				const data = envelope.data ?? {};
				out.push({
					json: { ...data, seq: data.seq, call_id: data.call_id ?? callId, type, scroll, tags },
					pairedItem: { item: i },
				});
			} catch (error) {
				if (this.continueOnFail()) {
					out.push({ json: { error: (error as Error).message }, pairedItem: { item: i } });
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
