-- A card field's value as worker/domain/notice.py's truncate_field() makes it: "(empty)" for
-- nothing, else cut to Discord's 1024-character limit, trailing white space (what Python's
-- str.isspace() calls white space, all 29 characters) dropped, ending in an ellipsis.
CREATE OR REPLACE FUNCTION memory_worker.memory_notice_field(p_value text, OUT value text, OUT cut boolean)
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_value = '' THEN '(empty)'
                WHEN length(p_value) <= 1024 THEN p_value
                ELSE rtrim(left(p_value, 1023), U&'\0009\000A\000B\000C\000D\001C\001D\001E\001F\0020\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000') || U&'\2026' END,
           length(p_value) > 1024;
$$;
