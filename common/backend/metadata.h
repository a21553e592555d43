/* metadata.h - the sbx.* metadata keys every sandbox sbx makes carries
 * (DESIGN §6), so that a crashed run can be recovered and the reaper can
 * judge a sandbox: the one place their names are spelled.  Users cannot
 * set a label under SBX_MD_PREFIX (sbx-create refuses it). */
#ifndef SBX_METADATA_H
#define SBX_METADATA_H

#define SBX_MD_PREFIX "sbx."
#define SBX_MD_MANAGED "sbx.managed"                  /* "1" */
#define SBX_MD_TENANT "sbx.tenant"
#define SBX_MD_SESSION "sbx.session"
#define SBX_MD_PROFILE "sbx.profile"
#define SBX_MD_BINDING_VERSION "sbx.binding_version"
#define SBX_MD_CREATED_BY "sbx.created_by"            /* the run id */
#define SBX_MD_PURPOSE "sbx.purpose"                  /* "skill-install" for installers */
#define SBX_MD_IMAGE_GENERATION "sbx.image_generation" /* installers: the image they started from */
#define SBX_MD_KEYSPACE "sbx.keyspace"                /* keyspace.h */

#define SBX_PURPOSE_SKILL_INSTALL "skill-install"

#endif
