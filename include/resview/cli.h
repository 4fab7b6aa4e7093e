/* cli.h - the `resview` admin commands, one file each (src/cmd_*.c). Each
 * returns the process exit code. */
#ifndef RESVIEW_CLI_H
#define RESVIEW_CLI_H

#include "resview/config.h"

int rv_cmd_env(const struct rv_config *cfg, int argc, char **argv);
int rv_cmd_repair(const struct rv_config *cfg, int argc, char **argv);
int rv_cmd_watch(const struct rv_config *cfg, int argc, char **argv);
int rv_cmd_configure(const struct rv_config *cfg, int argc, char **argv);
int rv_cmd_node(const struct rv_config *cfg, int argc, char **argv);
int rv_cmd_doctor(const struct rv_config *cfg, int argc, char **argv);
int rv_cmd_nri(const struct rv_config *cfg, int argc, char **argv);

#endif
