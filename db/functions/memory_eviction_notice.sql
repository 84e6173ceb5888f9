-- The eviction notice: the template the pure planner made for an empty forgotten content
-- (worker/domain/eviction_notice.py), completed with the content the save forgot. The card's
-- third field is "Forgotten"; the expand action and attachment follow plan_notice(): set when a
-- field was cut, the full text as a description up to 4096 characters, else as notice.txt.
CREATE OR REPLACE FUNCTION memory_worker.memory_eviction_notice(p_template jsonb, p_forgotten text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v_field  record;
    v_notice jsonb := p_template -> 'notice';
    v_card   jsonb;
    v_text   text;
    v_expand jsonb := 'null';
    v_attach jsonb := 'null';
BEGIN
    SELECT * INTO v_field FROM memory_notice_field(p_forgotten);
    v_card := jsonb_set(p_template -> 'card', '{fields,2,value}', to_jsonb(v_field.value));
    IF (p_template ->> 'saved_cut')::boolean OR v_field.cut THEN
        v_text := (p_template ->> 'text_head') || p_forgotten;
        IF length(v_text) <= 4096 THEN
            v_expand := jsonb_build_object('label', 'Show full text', 'delivery', 'description', 'description', v_text);
        ELSE
            v_expand := jsonb_build_object('label', 'Show full text', 'delivery', 'attachment', 'description', NULL);
            v_attach := jsonb_build_object('filename', 'notice.txt', 'content', v_text, 'ephemeral', true);
        END IF;
    END IF;
    IF v_notice #>> '{conversation,mode}' = 'card' THEN
        v_notice := jsonb_set(v_notice, '{conversation}', (v_notice -> 'conversation')
                              || jsonb_build_object('card', v_card, 'expand', v_expand, 'attachment', v_attach));
    END IF;
    IF jsonb_typeof(v_notice -> 'thought_log') = 'object' THEN
        v_notice := jsonb_set(v_notice, '{thought_log}', (v_notice -> 'thought_log')
                              || jsonb_build_object('card', v_card, 'expand', v_expand, 'attachment', v_attach));
    END IF;
    RETURN v_notice;
END;
$$;
