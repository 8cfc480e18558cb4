#ifndef COUNTERSIGN_COPENSSL_SHIM_H
#define COUNTERSIGN_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/obj_mac.h>
#include <openssl/core_names.h>
#include <openssl/x509.h>
#include <openssl/rand.h>
#endif
