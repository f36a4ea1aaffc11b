// OpenSSL server contexts and peer identity.
#include "berth/http/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace berth::http {

std::string TlsErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown TLS error" : out;
}

StatusOr<std::unique_ptr<TlsContext>> TlsContext::Create(const TlsOptions& o) {
  if (o.cert_file.empty() || o.key_file.empty()) return InvalidArgument("TLS needs both a certificate and a key file");
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return Internal("TLS: " + TlsErrors());
  std::unique_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1)
    return InvalidArgument("TLS certificate " + o.cert_file + ": " + TlsErrors());
  if (SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    return InvalidArgument("TLS key " + o.key_file + ": " + TlsErrors());
  if (SSL_CTX_check_private_key(ctx) != 1)
    return InvalidArgument("TLS key " + o.key_file + " does not match certificate " + o.cert_file);
  if (!o.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, o.client_ca_file.c_str(), nullptr) != 1)
      return InvalidArgument("TLS client CA " + o.client_ca_file + ": " + TlsErrors());
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.client_ca_file.c_str());
    if (names) SSL_CTX_set_client_CA_list(ctx, names);
    int mode = SSL_VERIFY_PEER;
    if (o.require_client_cert) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(ctx, mode, nullptr);
    SSL_CTX_set_verify_depth(ctx, 4);
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

SSL* TlsContext::NewSession(int fd) const {
  SSL* ssl = SSL_new(ctx_);
  if (!ssl) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

bool VerifiedPeer(SSL* ssl, std::string* subject, std::string* common_name) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return false;
  const bool ok = SSL_get_verify_result(ssl) == X509_V_OK;
  if (ok) {
    X509_NAME* name = X509_get_subject_name(cert);
    BIO* bio = BIO_new(BIO_s_mem());
    X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
    char* data = nullptr;
    long len = BIO_get_mem_data(bio, &data);
    subject->assign(data, static_cast<size_t>(len));
    BIO_free(bio);
    char cn[256] = {0};
    if (X509_NAME_get_text_by_NID(name, NID_commonName, cn, sizeof cn) > 0) *common_name = cn;
  }
  X509_free(cert);
  return ok;
}

}  // namespace berth::http
