# The man pages, from the Markdown beside their parts (go-md2man, Debian's
# package of it); the pages are build outputs, never in the tree. The header
# carries $(VERSION) and the date of the last commit of the sources
# (SOURCE_DATE_EPOCH when set, as Debian's builds set it; today outside git).
MAN_SRCS  := src/cli/resview.8.md src/runtime/resview-runtime.8.md src/lxcfs/resview-hook.8.md \
             src/common/resview.json.5.md
MAN_PAGES := $(addprefix $(BUILD)/man/,$(notdir $(MAN_SRCS:.md=)))
MAN_DATE   = $(shell if [ -n "$$SOURCE_DATE_EPOCH" ]; then date -u -d "@$$SOURCE_DATE_EPOCH" +%F; \
                 else git log -1 --format=%cs -- $(MAN_SRCS) 2>/dev/null | grep . || date -u +%F; fi)

.PHONY: man man-stamp
man: $(MAN_PAGES)
# rebuilt when the version or the date changes, not only their sources
$(BUILD)/man/.stamp: man-stamp
	@mkdir -p $(@D) && [ "$$(cat $@ 2>/dev/null)" = "$(VERSION) $(MAN_DATE)" ] || echo "$(VERSION) $(MAN_DATE)" >$@

define man_rule
$(BUILD)/man/$(notdir $(1:.md=)): $(1) src/man.mk $(BUILD)/man/.stamp
	@mkdir -p $$(@D)
	@command -v go-md2man >/dev/null || { echo "make man: go-md2man is missing (apt-get install go-md2man)" >&2; exit 1; }
	sed -e 's/@VERSION@/$$(VERSION)/g' -e 's/@DATE@/$$(MAN_DATE)/g' $$< | go-md2man -out $$@.tmp && mv $$@.tmp $$@
endef
$(foreach s,$(MAN_SRCS),$(eval $(call man_rule,$(s))))
