import type {
	IAuthenticateGeneric,
	ICredentialTestRequest,
	ICredentialType,
	INodeProperties,
} from 'n8n-workflow';

export class AccordsApi implements ICredentialType {
	name = 'accordsApi';

	displayName = 'Accords MCP Bridge API';

	documentationUrl = 'https://github.com/accordsai/accords-mcp/blob/main/docs/gateway.md#http-authentication';

	icon = { light: 'file:../nodes/shared/accords.svg', dark: 'file:../nodes/shared/accords.dark.svg' } as const;

	properties: INodeProperties[] = [
		{
			displayName: 'Bridge URL',
			name: 'bridgeUrl',
			type: 'string',
			default: 'http://127.0.0.1:8765/v1/mcp',
			placeholder: 'http://127.0.0.1:8765/v1/mcp',
			description: 'The MCP endpoint of the accords-mcp HTTP bridge (ACCORDS_MCP_HTTP_ADDR)',
			required: true,
		},
		{
			displayName: 'Bearer Token',
			name: 'token',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: 'The token of a [[callers]] entry of the policy file',
			required: true,
		},
		{
			displayName: 'Audit Log Key',
			name: 'auditKey',
			type: 'string',
			default: '',
			placeholder: 'accords-mcp-audit-6ba85719+0a1b2c3d+AQ...',
			description:
				'The published audit key (accords-mcp audit key) that receipts are verified against. Empty: the key the bridge serves at /.well-known/accords-audit-key, which proves less.',
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			headers: {
				Authorization: '=Bearer {{$credentials.token}}',
			},
		},
	};

	test: ICredentialTestRequest = {
		request: {
			method: 'POST',
			url: '={{$credentials.bridgeUrl}}',
			headers: { Accept: 'application/json' },
			body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
			json: true,
		},
	};
}
