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

/* OpenSSL's table of multiples of a group's generator (deprecated in 3.0, still built by Debian).
   Returns 0 where the library was built without the 3.0 deprecated functions; callers then use the
   ordinary verify. */
static inline int countersign_precompute_generator_multiples(EC_GROUP *group, BN_CTX *context) {
#ifndef OPENSSL_NO_DEPRECATED_3_0
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    return EC_GROUP_precompute_mult(group, context) == 1 && EC_GROUP_have_precompute_mult(group) == 1;
#pragma clang diagnostic pop
#else
    (void)group;
    (void)context;
    return 0;
#endif
}
#endif
