package gateway

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// idp is zitadel's OpenID-certified provider on loopback, with the example
// in-memory storage and, on top of it, what a resource server needs from
// a real provider: JWT access tokens for the client credentials grant,
// with the resource in aud, the requested scopes, a tenant claim and a
// groups claim, and a signing key the test can rotate. Client ids are the
// callers (any id, secret "s3cret"); a client id "expired" gets a token
// that expired two minutes ago, "elsewhere" one for another resource.
type idp struct {
	*storage.Storage
	srv      *httptest.Server
	audience string

	mu  sync.Mutex
	key *rsa.PrivateKey
	kid string
}

const idpSecret = "s3cret"

func newIDP(t *testing.T, audience string) *idp {
	t.Helper()
	p := &idp{audience: audience}
	p.rotate(t)
	p.srv = httptest.NewUnstartedServer(nil)
	p.srv.Start()
	t.Cleanup(p.srv.Close)
	p.Storage = storage.NewStorage(storage.NewUserStore(p.srv.URL))
	provider, err := op.NewProvider(&op.Config{CryptoKey: [32]byte{1}, CodeMethodS256: true}, p, op.StaticIssuer(p.srv.URL), op.WithAllowInsecure())
	require.NoError(t, err)
	p.srv.Config.Handler = provider
	return p
}

// rotate replaces the signing key: tokens carry the new key id and the
// JWKS lists only the new key.
func (p *idp) rotate(t *testing.T) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	p.mu.Lock()
	p.key, p.kid = key, uuid.NewString()
	p.mu.Unlock()
}

// token obtains an access token with the client credentials grant.
func (p *idp) token(t *testing.T, client string, scopes ...string) string {
	t.Helper()
	// A plain form POST: the token response of "expired" has a negative
	// lifetime, which OAuth client libraries refuse to parse.
	resp, err := http.PostForm(p.srv.URL+"/oauth/token", url.Values{
		"grant_type": {"client_credentials"}, "client_id": {client}, "client_secret": {idpSecret}, "scope": {strings.Join(scopes, " ")},
	})
	require.NoError(t, err)
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotEmpty(t, tok.AccessToken)
	return tok.AccessToken
}

// sign makes a token the provider never issued, signed with its current
// key (wrong issuer) or with key (a forgery under the provider's key id).
func (p *idp) sign(t *testing.T, claims map[string]any, key *rsa.PrivateKey) string {
	t.Helper()
	p.mu.Lock()
	kid := p.kid
	if key == nil {
		key = p.key
	}
	p.mu.Unlock()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", kid))
	require.NoError(t, err)
	raw, err := json.Marshal(claims)
	require.NoError(t, err)
	jws, err := signer.Sign(raw)
	require.NoError(t, err)
	s, err := jws.CompactSerialize()
	require.NoError(t, err)
	return s
}

type idpKey struct {
	key *rsa.PrivateKey
	kid string
}

func (k idpKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k idpKey) Key() any                                    { return k.key }
func (k idpKey) ID() string                                  { return k.kid }
func (k idpKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k idpKey) Use() string                                 { return "sig" }

type idpPublicKey struct{ idpKey }

func (k idpPublicKey) Key() any { return &k.key.PublicKey }

func (p *idp) current() idpKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return idpKey{p.key, p.kid}
}

func (p *idp) SigningKey(context.Context) (op.SigningKey, error) { return p.current(), nil }

func (p *idp) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (p *idp) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{idpPublicKey{p.current()}}, nil
}

// jwtClient issues JWT access tokens with the client credentials grant.
type jwtClient struct {
	op.Client
	id string
}

func (c jwtClient) GetID() string                     { return c.id }
func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (jwtClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (jwtClient) ClockSkew() time.Duration { return 0 }
func (jwtClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (p *idp) ClientCredentials(ctx context.Context, clientID, secret string) (op.Client, error) {
	base, err := p.Storage.ClientCredentials(ctx, "sid1", "verysecret")
	if err != nil || secret != idpSecret {
		return nil, oidc.ErrInvalidClient()
	}
	return jwtClient{Client: base, id: clientID}, nil
}

func (p *idp) ClientCredentialsTokenRequest(_ context.Context, clientID string, scopes []string) (op.TokenRequest, error) {
	aud := p.audience
	if clientID == "elsewhere" {
		aud = "https://other.example.test/v1/mcp"
	}
	return &oidc.JWTTokenRequest{Subject: clientID, Audience: []string{aud}, Scopes: scopes}, nil
}

func (p *idp) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	id, exp, err := p.Storage.CreateAccessToken(ctx, req)
	if req.GetSubject() == "expired" {
		exp = time.Now().Add(-2 * time.Minute)
	}
	return id, exp, err
}

// GetPrivateClaimsFromScopes adds the scope, tenant and groups claims.
func (p *idp) GetPrivateClaimsFromScopes(_ context.Context, userID, _ string, scopes []string) (map[string]any, error) {
	tenant, _, _ := strings.Cut(userID, ".")
	return map[string]any{"scope": strings.Join(scopes, " "), "tenant": tenant, "groups": []string{"staff"}}, nil
}
