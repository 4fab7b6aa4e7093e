/* apparmor.h - is AppArmor enabled, and is a profile loaded? (FUSE grant) */
#ifndef RESVIEW_APPARMOR_H
#define RESVIEW_APPARMOR_H

#include "resview/util.h"

#define RV_AA_ENABLED_PATH "/sys/module/apparmor/parameters/enabled"
#define RV_AA_PROFILES_PATH "/sys/kernel/security/apparmor/profiles"

enum rv_aa_state {
    RV_AA_DISABLED = 0,    /* no AppArmor (module absent, or enabled != Y) */
    RV_AA_LOADED,          /* enabled, and the profile is loaded */
    RV_AA_NOT_LOADED,      /* enabled, the profile is not loaded */
};

/* State of profile `name`. The paths are injectable for tests (NULL: the
 * defaults above). Fails only when AppArmor is enabled and its profile list
 * cannot be read. */
int rv_apparmor_state(const char *enabled_path, const char *profiles_path, const char *name,
                      enum rv_aa_state *state, struct rv_error *err);

#endif
