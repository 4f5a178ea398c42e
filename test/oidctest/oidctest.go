// Package oidctest runs zitadel's OpenID-certified provider on loopback for
// the tests of the OAuth resource server: its example in-memory storage,
// and on top of it what a resource server needs from a real provider. JWT
// access tokens carry the resource in aud, the granted scopes, a tenant
// claim (the part of the subject before its first dot) and a groups claim,
// under a signing key the test can rotate. Two grants issue them:
//
//   - client credentials: any client id with the secret Secret; the id is
//     the subject. Client id "expired" gets a token that expired two
//     minutes ago, "elsewhere" one for another resource.
//   - authorization code with PKCE for the public client PublicClient
//     (redirect URI RedirectURI, any loopback port): its login page, at
//     LoginPath, is a plain HTML form (username, password, the hidden
//     authRequestID) that accepts any username with the password Secret
//     and sends the browser on to the provider's callback.
package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"html/template"
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

const (
	// Secret is every client's secret and every user's password.
	Secret = "s3cret"
	// PublicClient is the client id of the authorization code flow.
	PublicClient = "mcp-native"
	// RedirectURI is PublicClient's redirect URI; a native client may use
	// it on any loopback port.
	RedirectURI = "http://127.0.0.1/callback"
	// LoginPath serves the login form.
	LoginPath = "/login/username"
)

// Provider is the running provider.
type Provider struct {
	*storage.Storage
	// URL is the issuer.
	URL      string
	srv      *httptest.Server
	op       *op.Provider
	audience string

	mu  sync.Mutex
	key *rsa.PrivateKey
	kid string
}

// Start runs a provider whose tokens name audience in aud.
func Start(t testing.TB, audience string) *Provider {
	t.Helper()
	p := &Provider{audience: audience}
	p.Rotate(t)
	p.srv = httptest.NewServer(nil)
	t.Cleanup(p.srv.Close)
	p.URL = p.srv.URL
	clients := map[string]*storage.Client{PublicClient: storage.NativeClient(PublicClient, RedirectURI)}
	p.Storage = storage.NewStorageWithClients(users{}, clients)
	provider, err := op.NewProvider(&op.Config{CryptoKey: [32]byte{1}, CodeMethodS256: true}, p, op.StaticIssuer(p.URL), op.WithAllowInsecure())
	require.NoError(t, err)
	p.op = provider
	mux := http.NewServeMux()
	mux.HandleFunc(LoginPath, p.login)
	mux.Handle("/", provider)
	p.srv.Config.Handler = mux
	return p
}

// Rotate replaces the signing key: tokens carry the new key id and the
// JWKS lists only the new key.
func (p *Provider) Rotate(t testing.TB) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	p.mu.Lock()
	p.key, p.kid = key, uuid.NewString()
	p.mu.Unlock()
}

// Token obtains an access token with the client credentials grant.
func (p *Provider) Token(t testing.TB, client string, scopes ...string) string {
	t.Helper()
	// A plain form POST: the token response of "expired" has a negative
	// lifetime, which OAuth client libraries refuse to parse.
	resp, err := http.PostForm(p.URL+"/oauth/token", url.Values{
		"grant_type": {"client_credentials"}, "client_id": {client}, "client_secret": {Secret}, "scope": {strings.Join(scopes, " ")},
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

// Sign makes a token the provider never issued, signed with its current
// key (wrong issuer) or with key (a forgery under the provider's key id).
func (p *Provider) Sign(t testing.TB, claims map[string]any, key *rsa.PrivateKey) string {
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

var loginForm = template.Must(template.New("login").Parse(`<!doctype html>
<title>Sign in</title>
<form method="post" action="{{.Action}}">
<input type="hidden" name="authRequestID" value="{{.ID}}">
<label>Username <input name="username"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button>
</form>
`))

// login serves the form (GET) and checks it (POST): a good password
// finishes the authorization request and redirects to the provider's
// callback, which redirects to the client with the code.
func (p *Provider) login(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = loginForm.Execute(w, map[string]string{"Action": LoginPath, "ID": r.URL.Query().Get("authRequestID")})
	case http.MethodPost:
		id := r.PostFormValue("authRequestID")
		if err := p.CheckUsernamePassword(r.PostFormValue("username"), r.PostFormValue("password"), id); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		http.Redirect(w, r, op.AuthCallbackURL(p.op)(r.Context(), id), http.StatusFound)
	default:
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
	}
}

// users accepts any username with the password Secret; the username is
// the user id.
type users struct{}

func (users) GetUserByID(id string) *storage.User {
	return &storage.User{ID: id, Username: id, Password: Secret, EmailVerified: true}
}
func (u users) GetUserByUsername(name string) *storage.User { return u.GetUserByID(name) }
func (users) ExampleClientID() string                       { return storage.ServiceUserID }

type signingKey struct {
	key *rsa.PrivateKey
	kid string
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.kid }
func (k signingKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k signingKey) Use() string                                 { return "sig" }

type publicKey struct{ signingKey }

func (k publicKey) Key() any { return &k.key.PublicKey }

func (p *Provider) current() signingKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return signingKey{p.key, p.kid}
}

// SigningKey, SignatureAlgorithms and KeySet serve the rotatable key.
func (p *Provider) SigningKey(context.Context) (op.SigningKey, error) { return p.current(), nil }

func (p *Provider) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (p *Provider) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{p.current()}}, nil
}

// jwtClient issues JWT access tokens with every scope it is asked for.
type jwtClient struct {
	op.Client
	id string
}

func (c jwtClient) GetID() string                     { return c.id }
func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (jwtClient) ClockSkew() time.Duration            { return 0 }
func (jwtClient) IsScopeAllowed(string) bool          { return true }
func (jwtClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// serviceClient is a jwtClient of the client credentials grant.
type serviceClient struct{ jwtClient }

func (serviceClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}

// GetClientByClientID serves PublicClient with JWT access tokens.
func (p *Provider) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := p.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return jwtClient{Client: c, id: id}, nil
}

func (p *Provider) ClientCredentials(ctx context.Context, clientID, secret string) (op.Client, error) {
	base, err := p.Storage.ClientCredentials(ctx, "sid1", "verysecret")
	if err != nil || secret != Secret {
		return nil, oidc.ErrInvalidClient()
	}
	return serviceClient{jwtClient{Client: base, id: clientID}}, nil
}

func (p *Provider) ClientCredentialsTokenRequest(_ context.Context, clientID string, scopes []string) (op.TokenRequest, error) {
	aud := p.audience
	if clientID == "elsewhere" {
		aud = "https://other.example.test/v1/mcp"
	}
	return &oidc.JWTTokenRequest{Subject: clientID, Audience: []string{aud}, Scopes: scopes}, nil
}

// forResource is an authorization request whose access token is for the
// resource rather than for the client.
type forResource struct {
	op.AuthRequest
	aud string
}

func (r forResource) GetAudience() []string { return []string{r.aud} }

func (p *Provider) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	req, err := p.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	return forResource{AuthRequest: req, aud: p.audience}, nil
}

func (p *Provider) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	id, exp, err := p.Storage.CreateAccessToken(ctx, req)
	if req.GetSubject() == "expired" {
		exp = time.Now().Add(-2 * time.Minute)
	}
	return id, exp, err
}

// GetPrivateClaimsFromScopes adds the scope, tenant and groups claims.
func (p *Provider) GetPrivateClaimsFromScopes(_ context.Context, userID, _ string, scopes []string) (map[string]any, error) {
	tenant, _, _ := strings.Cut(userID, ".")
	return map[string]any{"scope": strings.Join(scopes, " "), "tenant": tenant, "groups": []string{"staff"}}, nil
}
